package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/internal/sqlstore"
	"github.com/jackc/pgx/v5"
)

// CreateSession stores s as a new session at version 0 and sets s.Version, s.UID (a fresh one),
// s.CreatedAt (unless already set) and s.UpdatedAt. Times are kept in UTC to the microsecond. EINVALID for an empty
// id or a non-empty context (messages enter through Commit); ECONFLICT if the session exists.
func (db *DB) CreateSession(ctx context.Context, s *hippocam.Session) error {
	snap, err := sqlstore.EncodeNewSession[[]byte](s)
	if err != nil {
		return err
	}
	now := db.now()
	created := sqlstore.CreatedAt(s, now)
	uid := hippocam.NewSessionUID()
	tag, err := db.pool.Exec(ctx, `INSERT INTO sessions
		(tenant, id, version, seq, stack, stack_log, rounds, usage, consolidations, transcript, pending, depth, messages, created_at, updated_at, uid)
		VALUES ($1, $2, 0, $3, $4, $5, $6, $7, $8, $9, $13, $10, 0, $11, $12, $14) ON CONFLICT DO NOTHING`,
		s.Tenant, s.ID, s.Seq, snap.Stack, snap.StackLog, snap.Rounds, snap.Usage, snap.Consolidations, snap.Transcript, len(s.Stack),
		created, now, snap.Pending, uid)
	if err != nil {
		return fmt.Errorf("postgres: create session: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return sqlstore.SessionExists(s.ID)
	}
	s.Version, s.UID, s.CreatedAt, s.UpdatedAt = 0, uid, created, now
	return nil
}

// Session loads a session with its context, both read from one snapshot of the database.
// ENOTFOUND if there is none.
func (db *DB) Session(ctx context.Context, tenant, id string) (*hippocam.Session, error) {
	var s *hippocam.Session
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		s = &hippocam.Session{Tenant: tenant, ID: id}
		var snap sqlstore.Snapshot[[]byte]
		err := tx.QueryRow(ctx, `SELECT uid, version, seq, stack, stack_log, rounds, usage, consolidations, transcript, pending, created_at, updated_at
			FROM sessions WHERE tenant = $1 AND id = $2`, tenant, id).
			Scan(&s.UID, &s.Version, &s.Seq, &snap.Stack, &snap.StackLog, &snap.Rounds, &snap.Usage, &snap.Consolidations, &snap.Transcript, &snap.Pending, &s.CreatedAt, &s.UpdatedAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return sqlstore.SessionNotFound(id)
		} else if err != nil {
			return err
		}
		if err := snap.Decode(s); err != nil {
			return err
		}
		s.CreatedAt, s.UpdatedAt = s.CreatedAt.UTC(), s.UpdatedAt.UTC()
		s.Context, err = queryMessages(ctx, tx, `SELECT `+sqlstore.MessageColumns+` FROM messages
			WHERE tenant = $1 AND session_id = $2 AND parent = '' ORDER BY pos`, tenant, id)
		return err
	})
	if err != nil {
		if hippocam.ErrorCode(err) != hippocam.EINTERNAL {
			return nil, err
		}
		return nil, fmt.Errorf("postgres: session %s: %w", id, err)
	}
	return s, nil
}

// Sessions lists the tenant's sessions, most recently updated first (ties by id).
func (db *DB) Sessions(ctx context.Context, tenant string) ([]hippocam.SessionInfo, error) {
	rows, err := db.pool.Query(ctx, `SELECT id, messages, depth, consolidations, updated_at, fork, client
		FROM sessions WHERE tenant = $1 ORDER BY updated_at DESC, id`, tenant)
	if err != nil {
		return nil, fmt.Errorf("postgres: sessions: %w", err)
	}
	defer rows.Close()
	var out []hippocam.SessionInfo
	for rows.Next() {
		in := hippocam.SessionInfo{Tenant: tenant}
		var consolidations []byte
		var fork, client string
		if err := rows.Scan(&in.ID, &in.Messages, &in.Depth, &consolidations, &in.UpdatedAt, &fork, &client); err != nil {
			return nil, fmt.Errorf("postgres: sessions: %w", err)
		}
		if err := json.Unmarshal(consolidations, &in.Consolidations); err != nil {
			return nil, fmt.Errorf("postgres: sessions: %s: %w", in.ID, err)
		}
		in.UpdatedAt = in.UpdatedAt.UTC()
		in.Fork = sqlstore.ParseFork(fork)
		in.Client = sqlstore.ParseClient(client)
		out = append(out, in)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: sessions: %w", err)
	}
	return out, nil
}

// FindSessions returns the ids of the tenant's sessions whose transcript hash or hash before
// the last answer is hash, most recently updated first.
func (db *DB) FindSessions(ctx context.Context, tenant, hash string) ([]string, error) {
	if hash == "" {
		return nil, nil
	}
	rows, err := db.pool.Query(ctx, `SELECT id FROM sessions WHERE tenant = $1 AND (head = $2 OR prev_head = $2)
		ORDER BY updated_at DESC, id`, tenant, hash)
	if err != nil {
		return nil, fmt.Errorf("postgres: find sessions: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("postgres: find sessions: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// SessionVersion returns the stored session's version and UID. ENOTFOUND if none.
func (db *DB) SessionVersion(ctx context.Context, tenant, id string) (int64, string, error) {
	var version int64
	var uid string
	err := db.pool.QueryRow(ctx, `SELECT version, uid FROM sessions WHERE tenant = $1 AND id = $2`, tenant, id).Scan(&version, &uid)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, "", sqlstore.SessionNotFound(id)
	} else if err != nil {
		return 0, "", fmt.Errorf("postgres: session version: %w", err)
	}
	return version, uid, nil
}

// Tombstoned reports whether any of hashes is a transcript hash of a deleted session of the
// tenant.
func (db *DB) Tombstoned(ctx context.Context, tenant string, hashes []string) (bool, error) {
	if len(hashes) == 0 {
		return false, nil
	}
	var found bool
	if err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM tombstones WHERE tenant = $1 AND hash = ANY ($2))`,
		tenant, hashes).Scan(&found); err != nil {
		return false, fmt.Errorf("postgres: tombstoned: %w", err)
	}
	return found, nil
}

// DeleteSession removes the session and, by cascade, all of its messages, their search terms
// with them, and its jobs, and records its transcript hashes as tombstones, in one transaction.
// Then, unless SkipVacuum is set, it vacuums the tables the rows were in (vacuum), so that their
// space is reusable at once. ENOTFOUND if none.
func (db *DB) DeleteSession(ctx context.Context, tenant, id string) error {
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		var head, prev string
		err := tx.QueryRow(ctx, `DELETE FROM sessions WHERE tenant = $1 AND id = $2 RETURNING head, prev_head`,
			tenant, id).Scan(&head, &prev)
		if errors.Is(err, pgx.ErrNoRows) {
			return sqlstore.SessionNotFound(id)
		} else if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO tombstones (tenant, hash)
			SELECT $1, h FROM unnest($2::text[]) AS h WHERE h <> '' ON CONFLICT DO NOTHING`, tenant, []string{head, prev})
		return err
	})
	if err != nil {
		if hippocam.ErrorCode(err) == hippocam.EINTERNAL {
			return fmt.Errorf("postgres: delete session: %w", err)
		}
		return err
	}
	if !db.SkipVacuum {
		db.vacuum(ctx)
	}
	return nil
}
