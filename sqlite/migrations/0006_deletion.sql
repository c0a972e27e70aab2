-- Delete means gone: none of a deleted session's text stays in the store.
--
-- sessions.uid is the session's creation identity (hippocam.Session.UID): a commit is applied
-- only to the session it was loaded from, never to one deleted and created again under the same
-- id. Sessions stored before this migration get a random one.
ALTER TABLE sessions ADD COLUMN uid TEXT NOT NULL DEFAULT '';
UPDATE sessions SET uid = lower(hex(randomblob(16)));

-- tombstones keeps, for each deleted session, its transcript hashes (the hash of its whole
-- transcript and the hash before its last answer), and no text: a history that would create a
-- session again from a deleted conversation is refused (docs/storage.md).
CREATE TABLE tombstones (
	tenant     TEXT NOT NULL,
	hash       TEXT NOT NULL,
	deleted_at INTEGER NOT NULL, -- unix microseconds, UTC
	PRIMARY KEY (tenant, hash)
) WITHOUT ROWID;

-- The search index removes a deleted row's entries from its segments at once, instead of
-- keeping them until a merge, so that deleted words leave the file with the session; then the
-- index is merged once to drop what deletions before this migration left.
INSERT INTO message_search (message_search, rank) VALUES ('secure-delete', 1);
INSERT INTO message_search (message_search) VALUES ('optimize');
