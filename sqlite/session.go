package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/internal/sqlstore"
)

// CreateSession stores s as a new session at version 0 and sets s.Version, s.UID (a fresh one),
// s.CreatedAt (unless already set) and s.UpdatedAt. Times are kept in UTC to the microsecond. EINVALID for an empty
// id or a non-empty context (messages enter through Commit); ECONFLICT if the session exists.
func (db *DB) CreateSession(ctx context.Context, s *hippocam.Session) error {
	snap, err := sqlstore.EncodeNewSession[string](s)
	if err != nil {
		return err
	}
	now := db.now()
	created := sqlstore.CreatedAt(s, now)
	uid := hippocam.NewSessionUID()
	res, err := db.write.ExecContext(ctx, `INSERT INTO sessions
		(tenant, id, uid, version, seq, stack, stack_log, rounds, usage, consolidations, transcript, pending, depth, messages, created_at, updated_at)
		VALUES (?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?) ON CONFLICT DO NOTHING`,
		s.Tenant, s.ID, uid, s.Seq, snap.Stack, snap.StackLog, snap.Rounds, snap.Usage, snap.Consolidations, snap.Transcript, snap.Pending, len(s.Stack),
		created.UnixMicro(), now.UnixMicro())
	if err != nil {
		return fmt.Errorf("sqlite: create session: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("sqlite: create session: %w", err)
	} else if n == 0 {
		return sqlstore.SessionExists(s.ID)
	}
	s.Version, s.UID, s.CreatedAt, s.UpdatedAt = 0, uid, created, now
	return nil
}

// Session loads a session with its context, both read from one snapshot of the database.
// ENOTFOUND if there is none.
func (db *DB) Session(ctx context.Context, tenant, id string) (*hippocam.Session, error) {
	tx, err := db.read.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("sqlite: session: %w", err)
	}
	defer tx.Rollback()
	s := &hippocam.Session{Tenant: tenant, ID: id}
	var snap sqlstore.Snapshot[string]
	var created, updated int64
	err = tx.QueryRowContext(ctx, `SELECT uid, version, seq, stack, stack_log, rounds, usage, consolidations, transcript, pending, created_at, updated_at
		FROM sessions WHERE tenant = ? AND id = ?`, tenant, id).
		Scan(&s.UID, &s.Version, &s.Seq, &snap.Stack, &snap.StackLog, &snap.Rounds, &snap.Usage, &snap.Consolidations, &snap.Transcript, &snap.Pending, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, sqlstore.SessionNotFound(id)
	} else if err != nil {
		return nil, fmt.Errorf("sqlite: session: %w", err)
	}
	if err := snap.Decode(s); err != nil {
		return nil, fmt.Errorf("sqlite: session %s: %w", id, err)
	}
	s.CreatedAt, s.UpdatedAt = time.UnixMicro(created).UTC(), time.UnixMicro(updated).UTC()
	if s.Context, err = queryMessages(ctx, tx, `SELECT `+sqlstore.MessageColumns+` FROM messages
		WHERE tenant = ? AND session_id = ? AND parent = '' ORDER BY pos`, tenant, id); err != nil {
		return nil, fmt.Errorf("sqlite: session %s: %w", id, err)
	}
	return s, nil
}

// Sessions lists the tenant's sessions, most recently updated first (ties by id).
func (db *DB) Sessions(ctx context.Context, tenant string) ([]hippocam.SessionInfo, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT id, messages, depth, consolidations, updated_at, fork, client
		FROM sessions WHERE tenant = ? ORDER BY updated_at DESC, id`, tenant)
	if err != nil {
		return nil, fmt.Errorf("sqlite: sessions: %w", err)
	}
	defer rows.Close()
	var out []hippocam.SessionInfo
	for rows.Next() {
		in := hippocam.SessionInfo{Tenant: tenant}
		var consolidations, fork, client string
		var updated int64
		if err := rows.Scan(&in.ID, &in.Messages, &in.Depth, &consolidations, &updated, &fork, &client); err != nil {
			return nil, fmt.Errorf("sqlite: sessions: %w", err)
		}
		if err := json.Unmarshal([]byte(consolidations), &in.Consolidations); err != nil {
			return nil, fmt.Errorf("sqlite: sessions: %s: %w", in.ID, err)
		}
		in.UpdatedAt = time.UnixMicro(updated).UTC()
		in.Fork = sqlstore.ParseFork(fork)
		in.Client = sqlstore.ParseClient(client)
		out = append(out, in)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: sessions: %w", err)
	}
	return out, nil
}

// FindSessions returns the ids of the tenant's sessions whose transcript hash or hash before
// the last answer is hash, most recently updated first.
func (db *DB) FindSessions(ctx context.Context, tenant, hash string) ([]string, error) {
	if hash == "" {
		return nil, nil
	}
	rows, err := db.read.QueryContext(ctx, `SELECT id FROM sessions WHERE tenant = ? AND (head = ? OR prev_head = ?)
		ORDER BY updated_at DESC, id`, tenant, hash, hash)
	if err != nil {
		return nil, fmt.Errorf("sqlite: find sessions: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("sqlite: find sessions: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// versionQuery reads a session's version and creation identity (prepared by Open).
const versionQuery = `SELECT version, uid FROM sessions WHERE tenant = ? AND id = ?`

// SessionVersion returns the stored session's version and UID. ENOTFOUND if none.
func (db *DB) SessionVersion(ctx context.Context, tenant, id string) (int64, string, error) {
	var version int64
	var uid string
	err := db.stmts[versionQuery].QueryRowContext(ctx, tenant, id).Scan(&version, &uid)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", sqlstore.SessionNotFound(id)
	} else if err != nil {
		return 0, "", fmt.Errorf("sqlite: session version: %w", err)
	}
	return version, uid, nil
}

// Tombstoned reports whether any of hashes is a transcript hash of a deleted session of the
// tenant.
func (db *DB) Tombstoned(ctx context.Context, tenant string, hashes []string) (bool, error) {
	if len(hashes) == 0 {
		return false, nil
	}
	list, err := json.Marshal(hashes)
	if err != nil {
		return false, fmt.Errorf("sqlite: tombstoned: %w", err)
	}
	var found bool
	if err := db.read.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM json_each(?) AS j
		JOIN tombstones AS t ON t.tenant = ? AND t.hash = j.value)`, string(list), tenant).Scan(&found); err != nil {
		return false, fmt.Errorf("sqlite: tombstoned: %w", err)
	}
	return found, nil
}

// DeleteSession removes the session and, by cascade, all of its messages and jobs, and their
// rows of the search index, and records its transcript hashes as tombstones, in one
// transaction; then it gives the freed pages back to the file system and empties the WAL
// (reclaim), so that the deleted text is in neither file. ENOTFOUND if none.
func (db *DB) DeleteSession(ctx context.Context, tenant, id string) error {
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		var head, prev string
		err := tx.QueryRowContext(ctx, `SELECT head, prev_head FROM sessions WHERE tenant = ? AND id = ?`, tenant, id).Scan(&head, &prev)
		if errors.Is(err, sql.ErrNoRows) {
			return sqlstore.SessionNotFound(id)
		} else if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM message_search WHERE rowid IN
			(SELECT seq FROM messages WHERE tenant = ? AND session_id = ?)`, tenant, id); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE tenant = ? AND id = ?`, tenant, id); err != nil {
			return err
		}
		for _, h := range []string{head, prev} {
			if h == "" {
				continue
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO tombstones (tenant, hash, deleted_at) VALUES (?, ?, ?)
				ON CONFLICT DO NOTHING`, tenant, h, db.now().UnixMicro()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		if hippocam.ErrorCode(err) == hippocam.EINTERNAL {
			return fmt.Errorf("sqlite: delete session: %w", err)
		}
		return err
	}
	db.reclaim(ctx, "delete session")
	return nil
}
