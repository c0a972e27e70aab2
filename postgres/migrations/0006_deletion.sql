-- Delete means gone: none of a deleted session's text stays in the store.
--
-- sessions.uid is the session's creation identity (hippocam.Session.UID): a commit is applied
-- only to the session it was loaded from, never to one deleted and created again under the same
-- id. Sessions stored before this migration get a random one.
ALTER TABLE sessions ADD COLUMN uid text NOT NULL DEFAULT '';
UPDATE sessions SET uid = md5(random()::text || clock_timestamp()::text || tenant || id);

-- tombstones keeps, for each deleted session, its transcript hashes (the hash of its whole
-- transcript and the hash before its last answer), and no text: a history that would create a
-- session again from a deleted conversation is refused (docs/storage.md).
CREATE TABLE tombstones (
	tenant     text NOT NULL,
	hash       text NOT NULL,
	deleted_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (tenant, hash)
);
