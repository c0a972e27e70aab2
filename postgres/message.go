package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/internal/sqlstore"
	"github.com/jackc/pgx/v5"
)

// Children returns, in order, the messages archived directly beneath ref. ENOTFOUND for a ref
// the session does not have, and for a session that does not exist.
func (db *DB) Children(ctx context.Context, tenant, sessionID, ref string) ([]hippocam.Message, error) {
	if ref == "" {
		return nil, sqlstore.RefNotFound(ref, sessionID)
	}
	kids, err := queryMessages(ctx, db.pool, `SELECT `+sqlstore.MessageColumns+` FROM messages
		WHERE tenant = $1 AND session_id = $2 AND parent = $3 ORDER BY pos`, tenant, sessionID, ref)
	if err != nil {
		return nil, fmt.Errorf("postgres: children %s: %w", ref, err)
	}
	if len(kids) > 0 {
		return kids, nil
	}
	var exists bool
	if err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM messages
		WHERE tenant = $1 AND session_id = $2 AND ref = $3 AND ref <> '')`, tenant, sessionID, ref).Scan(&exists); err != nil {
		return nil, fmt.Errorf("postgres: children %s: %w", ref, err)
	} else if !exists {
		return nil, sqlstore.RefNotFound(ref, sessionID)
	}
	return kids, nil
}

// Message returns one message of the session, in the context or archived. ENOTFOUND if none.
func (db *DB) Message(ctx context.Context, tenant, sessionID, id string) (*hippocam.Message, error) {
	row := db.pool.QueryRow(ctx, `SELECT `+sqlstore.MessageColumns+` FROM messages
		WHERE tenant = $1 AND session_id = $2 AND id = $3`, tenant, sessionID, id)
	m, err := sqlstore.ScanMessage[[]byte](row)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, sqlstore.MessageNotFound(id, sessionID)
	} else if err != nil {
		return nil, fmt.Errorf("postgres: message %s: %w", id, err)
	}
	return &m, nil
}

// querier is what both the pool and a transaction offer to read.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func queryMessages(ctx context.Context, q querier, query string, args ...any) ([]hippocam.Message, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []hippocam.Message
	for rows.Next() {
		m, err := sqlstore.ScanMessage[[]byte](rows)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}
