-- Clusters of the learning layer (docs/learning.md): one row per cluster, one isolated instance
-- of one memory system. state is the system's own JSON (NULL while empty), applied the JSON
-- array of the trajectory ids the cluster has learned from (a trajectory id is the id of the
-- session it came from, so a deleted session can be found in every cluster it fed). version
-- rises with every update; an update names the version it read. seq orders clusters created in
-- the same microsecond. Times are unix microseconds, UTC.
CREATE TABLE clusters (
	seq          INTEGER PRIMARY KEY,
	tenant       TEXT NOT NULL,
	id           TEXT NOT NULL,
	system       TEXT NOT NULL,
	description  TEXT NOT NULL,
	trajectories INTEGER NOT NULL DEFAULT 0,
	applied      TEXT NOT NULL DEFAULT '[]',
	state        TEXT,
	version      INTEGER NOT NULL DEFAULT 0,
	created_at   INTEGER NOT NULL,
	updated_at   INTEGER NOT NULL,
	UNIQUE (tenant, id)
);
