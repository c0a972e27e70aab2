-- Clusters of the learning layer (docs/learning.md): one row per cluster, one isolated instance
-- of one memory system. state is the system's own JSON, kept byte for byte (NULL while empty);
-- applied is the JSON array of the trajectory ids the cluster has learned from (a trajectory id
-- is the id of the session it came from, so a deleted session can be found in every cluster it
-- fed). version rises with every update; an update names the version it read, and replicas
-- updating one cluster at once serialize on its row. seq orders clusters created together.
CREATE TABLE clusters (
	seq          bigint GENERATED ALWAYS AS IDENTITY,
	tenant       text NOT NULL,
	id           text NOT NULL,
	system       text NOT NULL,
	description  text NOT NULL,
	trajectories integer NOT NULL DEFAULT 0,
	applied      text NOT NULL DEFAULT '[]',
	state        bytea,
	version      bigint NOT NULL DEFAULT 0,
	created_at   timestamptz NOT NULL,
	updated_at   timestamptz NOT NULL,
	PRIMARY KEY (tenant, id)
);

CREATE INDEX clusters_order ON clusters (tenant, created_at, seq);
