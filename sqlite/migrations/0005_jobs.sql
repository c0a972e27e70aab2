-- Durable jobs: the consolidation a step leaves for after its answer.
--
-- sessions.pending is the JSON of the session's Pending field ('null' when nothing is pending),
-- committed with the step that leaves it.
ALTER TABLE sessions ADD COLUMN pending TEXT NOT NULL DEFAULT 'null';

-- jobs is the queue. A session has at most one job of a kind: enqueuing it again raises gen
-- and makes it due at once, and a worker that finishes a run removes the row only if gen is
-- still what it claimed. A job is leased to lease_owner until lease_until (unix microseconds,
-- 0 when not leased); attempts counts claims and tells one claim of the job from the next.
-- run_after is when the job is due; last_error is why its last run failed. Jobs go with their
-- session.
CREATE TABLE jobs (
	id          INTEGER PRIMARY KEY,
	tenant      TEXT NOT NULL,
	session     TEXT NOT NULL,
	kind        TEXT NOT NULL,
	payload     BLOB,
	gen         INTEGER NOT NULL DEFAULT 1,
	attempts    INTEGER NOT NULL DEFAULT 0,
	lease_owner TEXT NOT NULL DEFAULT '',
	lease_until INTEGER NOT NULL DEFAULT 0,
	run_after   INTEGER NOT NULL,
	created_at  INTEGER NOT NULL,
	last_error  TEXT NOT NULL DEFAULT '',
	UNIQUE (tenant, session, kind),
	FOREIGN KEY (tenant, session) REFERENCES sessions (tenant, id) ON DELETE CASCADE
);

CREATE INDEX jobs_due ON jobs (run_after, id);
