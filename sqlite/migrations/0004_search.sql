-- Full-text search over every session's tree (the engine's search tool). Two changes:
--
-- 1. messages gets an explicit integer key, seq, in the order rows were inserted. The full-text
--    index names its rows by that number, and the implicit rowid it replaces could be renumbered
--    by a VACUUM. Search also sorts by seq: within a session, the last message to enter has the
--    highest. SQLite cannot change a primary key in place, so the table is rebuilt; the old key
--    (tenant, session_id, id) stays as a unique constraint that the commit's upserts name.
CREATE TABLE messages_new (
	seq          INTEGER PRIMARY KEY,
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
	source       TEXT,
	UNIQUE (tenant, session_id, id),
	FOREIGN KEY (tenant, session_id) REFERENCES sessions (tenant, id) ON DELETE CASCADE
);

INSERT INTO messages_new (tenant, session_id, id, parent, pos, role, kind, content, tool_calls, tool_call_id,
	ref, tokens, knowledge, trace, extra, source)
SELECT tenant, session_id, id, parent, pos, role, kind, content, tool_calls, tool_call_id,
	ref, tokens, knowledge, trace, extra, source
FROM messages ORDER BY rowid;

DROP TABLE messages;
ALTER TABLE messages_new RENAME TO messages;
CREATE UNIQUE INDEX messages_layer ON messages (tenant, session_id, parent, pos);
CREATE UNIQUE INDEX messages_ref ON messages (tenant, session_id, ref) WHERE ref <> '';

-- 2. message_search indexes the searchable text of original messages (kind raw), keyed by seq.
--    It is contentless: it keeps the index, not a second copy of the text, which stays in
--    messages. scope is one token naming the message's tenant and session (their bytes in hex,
--    joined by an x), so that a query matches only its own session's rows without scanning
--    anyone else's. Rows are written by the commit that inserts the message and deleted with the
--    session, in the same transactions (sqlite/commit.go, sqlite/session.go).
CREATE VIRTUAL TABLE message_search USING fts5 (
	scope, body,
	content = '', contentless_delete = 1,
	tokenize = 'unicode61 remove_diacritics 0'
);

-- Messages stored before this migration: their content, and the JSON of the tools they call
-- (commits write the names and arguments alone, which the JSON holds among its keys).
INSERT INTO message_search (rowid, scope, body)
SELECT seq, lower(hex(tenant)) || 'x' || lower(hex(session_id)),
	content || CASE WHEN tool_calls IS NULL THEN '' ELSE char(10) || tool_calls END
FROM messages WHERE kind IN ('raw', '') AND ref = '';
