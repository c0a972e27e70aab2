-- Formats and sessions found by content (every inbound wire format, sessions without a name):
-- messages.source keeps a message's non-text parts and the exact wire form it arrived in (JSON,
-- NULL when it has neither); sessions.head and prev_head are the transcript hash and the hash
-- before the last answer, so a history that names no session finds the one it continues;
-- sessions.fork is the JSON of a fork's origin, '' for a session that is no fork.
ALTER TABLE messages ADD COLUMN source bytea;
ALTER TABLE sessions ADD COLUMN head TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN prev_head TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN fork TEXT NOT NULL DEFAULT '';
CREATE INDEX sessions_head ON sessions (tenant, head);
CREATE INDEX sessions_prev_head ON sessions (tenant, prev_head);
