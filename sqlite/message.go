package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/internal/sqlstore"
)

// Children returns, in order, the messages archived directly beneath ref. ENOTFOUND for a ref
// the session does not have, and for a session that does not exist.
func (db *DB) Children(ctx context.Context, tenant, sessionID, ref string) ([]hippocam.Message, error) {
	if ref == "" {
		return nil, sqlstore.RefNotFound(ref, sessionID)
	}
	kids, err := queryMessages(ctx, db.read, `SELECT `+sqlstore.MessageColumns+` FROM messages
		WHERE tenant = ? AND session_id = ? AND parent = ? ORDER BY pos`, tenant, sessionID, ref)
	if err != nil {
		return nil, fmt.Errorf("sqlite: children %s: %w", ref, err)
	}
	if len(kids) > 0 {
		return kids, nil
	}
	var exists bool
	if err := db.read.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM messages
		WHERE tenant = ? AND session_id = ? AND ref = ? AND ref <> '')`, tenant, sessionID, ref).Scan(&exists); err != nil {
		return nil, fmt.Errorf("sqlite: children %s: %w", ref, err)
	} else if !exists {
		return nil, sqlstore.RefNotFound(ref, sessionID)
	}
	return kids, nil
}

// Message returns one message of the session, in the context or archived. ENOTFOUND if none.
func (db *DB) Message(ctx context.Context, tenant, sessionID, id string) (*hippocam.Message, error) {
	row := db.read.QueryRowContext(ctx, `SELECT `+sqlstore.MessageColumns+` FROM messages
		WHERE tenant = ? AND session_id = ? AND id = ?`, tenant, sessionID, id)
	m, err := sqlstore.ScanMessage[string](row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, sqlstore.MessageNotFound(id, sessionID)
	} else if err != nil {
		return nil, fmt.Errorf("sqlite: message %s: %w", id, err)
	}
	return &m, nil
}

// querier is what both *sql.DB and *sql.Tx offer to read.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func queryMessages(ctx context.Context, q querier, query string, args ...any) ([]hippocam.Message, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []hippocam.Message
	for rows.Next() {
		m, err := sqlstore.ScanMessage[string](rows)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}
