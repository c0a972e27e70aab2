package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/internal/sqlstore"
)

var _ hippocam.ClusterStore = (*DB)(nil)

// The learning layer's clusters live in the clusters table (migrations/0007).

// CreateCluster stores c as a new cluster at version 0 and sets c.Version, c.CreatedAt and
// c.UpdatedAt. EINVALID for a cluster without an id or a system, or whose state is not JSON;
// ECONFLICT if the tenant has a cluster with that id.
func (db *DB) CreateCluster(ctx context.Context, c *hippocam.Cluster) error {
	if err := hippocam.CheckCluster(c); err != nil {
		return err
	}
	now := db.now()
	res, err := db.write.ExecContext(ctx, `INSERT INTO clusters
		(tenant, id, system, description, trajectories, applied, state, version, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?) ON CONFLICT DO NOTHING`,
		c.Tenant, c.ID, c.System, c.Description, c.Trajectories, sqlstore.AppliedColumn(c), sqlstore.StateColumn[string](c),
		now.UnixMicro(), now.UnixMicro())
	if err != nil {
		return fmt.Errorf("sqlite: create cluster: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("sqlite: create cluster: %w", err)
	} else if n == 0 {
		return sqlstore.ClusterExists(c.ID)
	}
	c.Version, c.CreatedAt, c.UpdatedAt = 0, now, now
	return nil
}

// Cluster loads one cluster. ENOTFOUND if none.
func (db *DB) Cluster(ctx context.Context, tenant, id string) (*hippocam.Cluster, error) {
	c, err := scanCluster(db.read.QueryRowContext(ctx, `SELECT `+sqlstore.ClusterColumns+`
		FROM clusters WHERE tenant = ? AND id = ?`, tenant, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, sqlstore.ClusterNotFound(id)
	} else if err != nil {
		return nil, fmt.Errorf("sqlite: cluster %s: %w", id, err)
	}
	return c, nil
}

// Clusters lists the tenant's clusters, oldest first.
func (db *DB) Clusters(ctx context.Context, tenant string) ([]hippocam.Cluster, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT `+sqlstore.ClusterColumns+`
		FROM clusters WHERE tenant = ? ORDER BY created_at, seq`, tenant)
	if err != nil {
		return nil, fmt.Errorf("sqlite: clusters: %w", err)
	}
	defer rows.Close()
	var out []hippocam.Cluster
	for rows.Next() {
		c, err := scanCluster(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: clusters: %w", err)
		}
		out = append(out, *c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: clusters: %w", err)
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
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE clusters SET trajectories = ?, applied = ?, state = ?, version = version + 1, updated_at = ?
			WHERE tenant = ? AND id = ? AND version = ?`,
			c.Trajectories, sqlstore.AppliedColumn(c), sqlstore.StateColumn[string](c), now.UnixMicro(), c.Tenant, c.ID, from)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		var version int64
		err = tx.QueryRowContext(ctx, `SELECT version FROM clusters WHERE tenant = ? AND id = ?`, c.Tenant, c.ID).Scan(&version)
		if errors.Is(err, sql.ErrNoRows) {
			return sqlstore.ClusterNotFound(c.ID)
		} else if err != nil {
			return err
		}
		return sqlstore.ClusterVersionConflict(c.ID, version, from)
	})
	if err != nil {
		if hippocam.ErrorCode(err) == hippocam.EINTERNAL {
			return fmt.Errorf("sqlite: update cluster: %w", err)
		}
		return err
	}
	c.Version, c.UpdatedAt = from+1, now
	return nil
}

// DeleteCluster removes one cluster. ENOTFOUND if none.
func (db *DB) DeleteCluster(ctx context.Context, tenant, id string) error {
	res, err := db.write.ExecContext(ctx, `DELETE FROM clusters WHERE tenant = ? AND id = ?`, tenant, id)
	if err != nil {
		return fmt.Errorf("sqlite: delete cluster: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("sqlite: delete cluster: %w", err)
	} else if n == 0 {
		return sqlstore.ClusterNotFound(id)
	}
	return nil
}

// scanCluster reads one row of sqlstore.ClusterColumns.
func scanCluster(row interface{ Scan(...any) error }) (*hippocam.Cluster, error) {
	var c hippocam.Cluster
	var applied string
	var state *string
	var created, updated int64
	if err := row.Scan(&c.Tenant, &c.ID, &c.System, &c.Description, &c.Trajectories, &applied, &state, &c.Version, &created, &updated); err != nil {
		return nil, err
	}
	var err error
	if c.Applied, err = sqlstore.ParseApplied(applied); err != nil {
		return nil, err
	}
	c.State = sqlstore.ParseState(state)
	c.CreatedAt, c.UpdatedAt = time.UnixMicro(created).UTC(), time.UnixMicro(updated).UTC()
	return &c, nil
}
