-- Sessions: one row per (tenant, id). The snapshot fields are JSON; depth and messages are
-- kept for listings (len(stack) and the context's length).
CREATE TABLE sessions (
	tenant         text NOT NULL,
	id             text NOT NULL,
	version        bigint NOT NULL,
	seq            bigint NOT NULL,
	stack          json NOT NULL,
	stack_log      json NOT NULL,
	rounds         json NOT NULL,
	usage          json NOT NULL,
	consolidations json NOT NULL,
	depth          integer NOT NULL,
	messages       integer NOT NULL,
	created_at     timestamptz NOT NULL,
	updated_at     timestamptz NOT NULL,
	PRIMARY KEY (tenant, id)
);

-- Messages: the context (parent = '') and the archive (parent = the ref a message is archived
-- beneath), each layer ordered by pos. Content and extra are bytea so that they read back
-- byte for byte (text cannot hold NUL); lists are json (not jsonb, which rejects \u0000), NULL
-- when the Go value is nil.
CREATE TABLE messages (
	tenant       text NOT NULL,
	session_id   text NOT NULL,
	id           text NOT NULL,
	parent       text NOT NULL,
	pos          integer NOT NULL,
	role         text NOT NULL,
	kind         text NOT NULL,
	content      bytea NOT NULL,
	tool_calls   json,
	tool_call_id text NOT NULL,
	ref          text NOT NULL,
	tokens       integer NOT NULL,
	knowledge    json,
	trace        json,
	extra        bytea,
	PRIMARY KEY (tenant, session_id, id),
	FOREIGN KEY (tenant, session_id) REFERENCES sessions (tenant, id) ON DELETE CASCADE
);

-- One message per position of a layer; also serves Children and the context. It leads with
-- parent, and sessions has no second index on tenant, so that no index but the primary key
-- matches a lookup by (tenant, session_id, id) or (tenant, id): before statistics exist, the
-- planner's default estimates would rate a scan of a whole session as good as a key lookup.
CREATE UNIQUE INDEX messages_layer ON messages (parent, tenant, session_id, pos);

-- A ref names one archive node of its session.
CREATE UNIQUE INDEX messages_ref ON messages (tenant, session_id, ref) WHERE ref <> '';
