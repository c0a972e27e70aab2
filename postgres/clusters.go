package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/internal/sqlstore"
	"github.com/jackc/pgx/v5"
)

var _ hippocam.ClusterStore = (*DB)(nil)

// The learning layer's clusters live in the clusters table (migrations/0007), shared by every
// replica: an update claims the row by its version, so updates of one cluster serialize on the
// row lock and a stale one finds the version moved.

// CreateCluster stores c as a new cluster at version 0 and sets c.Version, c.CreatedAt and
// c.UpdatedAt. EINVALID for a cluster without an id or a system, or whose state is not JSON;
// ECONFLICT if the tenant has a cluster with that id.
func (db *DB) CreateCluster(ctx context.Context, c *hippocam.Cluster) error {
	if err := hippocam.CheckCluster(c); err != nil {
		return err
	}
	now := db.now()
	tag, err := db.pool.Exec(ctx, `INSERT INTO clusters
		(tenant, id, system, description, trajectories, applied, state, version, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, 0, $8, $8) ON CONFLICT DO NOTHING`,
		c.Tenant, c.ID, c.System, c.Description, c.Trajectories, sqlstore.AppliedColumn(c), sqlstore.StateColumn[[]byte](c), now)
	if err != nil {
		return fmt.Errorf("postgres: create cluster: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return sqlstore.ClusterExists(c.ID)
	}
	c.Version, c.CreatedAt, c.UpdatedAt = 0, now, now
	return nil
}

// Cluster loads one cluster. ENOTFOUND if none.
func (db *DB) Cluster(ctx context.Context, tenant, id string) (*hippocam.Cluster, error) {
	c, err := scanCluster(db.pool.QueryRow(ctx, `SELECT `+sqlstore.ClusterColumns+`
		FROM clusters WHERE tenant = $1 AND id = $2`, tenant, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, sqlstore.ClusterNotFound(id)
	} else if err != nil {
		return nil, fmt.Errorf("postgres: cluster %s: %w", id, err)
	}
	return c, nil
}

// Clusters lists the tenant's clusters, oldest first.
func (db *DB) Clusters(ctx context.Context, tenant string) ([]hippocam.Cluster, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+sqlstore.ClusterColumns+`
		FROM clusters WHERE tenant = $1 ORDER BY created_at, seq`, tenant)
	if err != nil {
		return nil, fmt.Errorf("postgres: clusters: %w", err)
	}
	defer rows.Close()
	var out []hippocam.Cluster
	for rows.Next() {
		c, err := scanCluster(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres: clusters: %w", err)
		}
		out = append(out, *c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: clusters: %w", err)
	}
	return out, nil
}

// UpdateCluster stores c's Trajectories, Applied and State if the stored cluster is at version
// from, and sets c.Version and c.UpdatedAt. EINVALID for a state that is not JSON; ECONFLICT if
// the version moved; ENOTFOUND if the cluster is gone.
func (db *DB) UpdateCluster(ctx context.Context, c *hippocam.Cluster, from int64) error {
	if err := hippocam.CheckCluster(c); err != nil {
		return err
	}
	now := db.now()
	tag, err := db.pool.Exec(ctx, `UPDATE clusters SET trajectories = $1, applied = $2, state = $3, version = version + 1, updated_at = $4
		WHERE tenant = $5 AND id = $6 AND version = $7`,
		c.Trajectories, sqlstore.AppliedColumn(c), sqlstore.StateColumn[[]byte](c), now, c.Tenant, c.ID, from)
	if err != nil {
		return fmt.Errorf("postgres: update cluster: %w", err)
	}
	if tag.RowsAffected() == 0 {
		var version int64
		err := db.pool.QueryRow(ctx, `SELECT version FROM clusters WHERE tenant = $1 AND id = $2`, c.Tenant, c.ID).Scan(&version)
		if errors.Is(err, pgx.ErrNoRows) {
			return sqlstore.ClusterNotFound(c.ID)
		} else if err != nil {
			return fmt.Errorf("postgres: update cluster: %w", err)
		}
		return sqlstore.ClusterVersionConflict(c.ID, version, from)
	}
	c.Version, c.UpdatedAt = from+1, now
	return nil
}

// DeleteCluster removes one cluster. ENOTFOUND if none.
func (db *DB) DeleteCluster(ctx context.Context, tenant, id string) error {
	tag, err := db.pool.Exec(ctx, `DELETE FROM clusters WHERE tenant = $1 AND id = $2`, tenant, id)
	if err != nil {
		return fmt.Errorf("postgres: delete cluster: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return sqlstore.ClusterNotFound(id)
	}
	return nil
}

// scanCluster reads one row of sqlstore.ClusterColumns.
func scanCluster(row pgx.Row) (*hippocam.Cluster, error) {
	var c hippocam.Cluster
	var applied string
	var state *[]byte
	if err := row.Scan(&c.Tenant, &c.ID, &c.System, &c.Description, &c.Trajectories, &applied, &state, &c.Version, &c.CreatedAt, &c.UpdatedAt); err != nil {
		return nil, err
	}
	var err error
	if c.Applied, err = sqlstore.ParseApplied(applied); err != nil {
		return nil, err
	}
	c.State = sqlstore.ParseState(state)
	c.CreatedAt, c.UpdatedAt = c.CreatedAt.UTC(), c.UpdatedAt.UTC()
	return &c, nil
}
