-- Sessions: one row per (tenant, id). The snapshot fields are JSON; depth and messages are
-- kept for listings (len(stack) and the context's length).
CREATE TABLE sessions (
	tenant         TEXT NOT NULL,
	id             TEXT NOT NULL,
	version        INTEGER NOT NULL,
	seq            INTEGER NOT NULL,
	stack          TEXT NOT NULL,
	stack_log      TEXT NOT NULL,
	rounds         TEXT NOT NULL,
	usage          TEXT NOT NULL,
	consolidations TEXT NOT NULL,
	depth          INTEGER NOT NULL,
	messages       INTEGER NOT NULL,
	created_at     INTEGER NOT NULL, -- unix microseconds, UTC
	updated_at     INTEGER NOT NULL,
	PRIMARY KEY (tenant, id)
);

CREATE INDEX sessions_updated ON sessions (tenant, updated_at DESC, id);

-- Messages: the context (parent = '') and the archive (parent = the ref a message is archived
-- beneath), each layer ordered by pos. Message fields that are lists or raw JSON are JSON text,
-- NULL when the Go value is nil.
CREATE TABLE messages (
	tenant       TEXT NOT NULL,
	session_id   TEXT NOT NULL,
	id           TEXT NOT NULL,
	parent       TEXT NOT NULL,
	pos          INTEGER NOT NULL,
	role         TEXT NOT NULL,
	kind         TEXT NOT NULL,
	content      TEXT NOT NULL,
	tool_calls   TEXT,
	tool_call_id TEXT NOT NULL,
	ref          TEXT NOT NULL,
	tokens       INTEGER NOT NULL,
	knowledge    TEXT,
	trace        TEXT,
	extra        TEXT,
	PRIMARY KEY (tenant, session_id, id),
	FOREIGN KEY (tenant, session_id) REFERENCES sessions (tenant, id) ON DELETE CASCADE
);

-- One message per position of a layer; also serves Children and the context.
CREATE UNIQUE INDEX messages_layer ON messages (tenant, session_id, parent, pos);

-- A ref names one archive node of its session.
CREATE UNIQUE INDEX messages_ref ON messages (tenant, session_id, ref) WHERE ref <> '';
