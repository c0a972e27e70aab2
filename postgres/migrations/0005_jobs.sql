-- Durable jobs: the consolidation a step leaves for after its answer.
--
-- sessions.pending is the JSON of the session's Pending field (JSON null when nothing is
-- pending), committed with the step that leaves it.
ALTER TABLE sessions ADD COLUMN pending json NOT NULL DEFAULT 'null';

-- jobs is the queue, shared by every replica of the database. A session has at most one job of
-- a kind: enqueuing it again raises gen and makes it due at once, and a worker that finishes a
-- run removes the row only if gen is still what it claimed. A job is leased to lease_owner until
-- lease_until (NULL when not leased); attempts counts claims and tells one claim of the job from
-- the next. run_after is when the job is due; last_error is why its last run failed. Times are
-- the server's clock, so that replicas whose clocks differ agree on when a lease runs out. Jobs
-- go with their session.
CREATE TABLE jobs (
	id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	tenant      text NOT NULL,
	session     text NOT NULL,
	kind        text NOT NULL,
	payload     bytea,
	gen         bigint NOT NULL DEFAULT 1,
	attempts    integer NOT NULL DEFAULT 0,
	lease_owner text NOT NULL DEFAULT '',
	lease_until timestamptz,
	run_after   timestamptz NOT NULL DEFAULT now(),
	created_at  timestamptz NOT NULL DEFAULT now(),
	last_error  text NOT NULL DEFAULT '',
	UNIQUE (tenant, session, kind),
	FOREIGN KEY (tenant, session) REFERENCES sessions (tenant, id) ON DELETE CASCADE
);

CREATE INDEX jobs_due ON jobs (run_after, id);
