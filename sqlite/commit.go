package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/internal/sqlstore"
)

// Commit applies ch to the stored session and stores s's snapshot fields, in one transaction;
// on success it sets s.Version to ch.From+1 and s.UpdatedAt. ECONFLICT if the stored version is
// not ch.From or the stored session has another UID (it was deleted and created again); ENOTFOUND if the session is gone; EINVALID if an op is malformed or names a
// message that is not in the context. A failed commit changes nothing. Ops are applied by
// sqlstore.Apply, which says where appended and folded messages go.
func (db *DB) Commit(ctx context.Context, s *hippocam.Session, ch hippocam.Change) error {
	if s == nil {
		return hippocam.Errorf(hippocam.EINVALID, "commit: no session")
	}
	if err := hippocam.CheckJobs(ch.Jobs); err != nil {
		return err
	}
	snap, err := sqlstore.EncodeSnapshot[string](s)
	if err != nil {
		return err
	}
	now := db.now()
	err = db.writeTx(ctx, func(tx *sql.Tx) error {
		// Bump the version first: the row is the commit's claim on the session.
		res, err := db.inTx(ctx, tx, commitUpdate).ExecContext(ctx, s.Seq, snap.Stack, snap.StackLog, snap.Rounds, snap.Usage, snap.Consolidations, snap.Transcript, snap.Pending,
			s.Transcript.Hash, s.Transcript.PrevHash, sqlstore.ForkColumn(s), sqlstore.ClientColumn(s), len(s.Stack),
			sqlstore.ContextGrowth(ch.Ops), now.UnixMicro(), s.Tenant, s.ID, ch.From, s.UID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return versionError(ctx, tx, s, ch.From)
		}
		if err := sqlstore.Apply(ctx, &commitTx{db: db, tx: tx, tenant: s.Tenant, session: s.ID}, ch.Ops); err != nil {
			return err
		}
		return enqueueJobs(ctx, tx, s.Tenant, s.ID, ch.Jobs, now)
	})
	if err != nil {
		if hippocam.ErrorCode(err) != hippocam.EINTERNAL {
			return err
		}
		return fmt.Errorf("sqlite: commit %s: %w", s.ID, err)
	}
	s.Version, s.UpdatedAt = ch.From+1, now
	return nil
}

// commitUpdate bumps the session's version and stores its snapshot fields.
const commitUpdate = `UPDATE sessions SET version = version + 1, seq = ?, stack = ?, stack_log = ?,
	rounds = ?, usage = ?, consolidations = ?, transcript = ?, pending = ?, head = ?, prev_head = ?, fork = ?, client = ?, depth = ?,
	messages = messages + ?, updated_at = ?
	WHERE tenant = ? AND id = ? AND version = ? AND uid = ?`

// versionError tells a session that is gone (ENOTFOUND) from one at another version or created
// again since s was loaded (ECONFLICT).
func versionError(ctx context.Context, tx *sql.Tx, s *hippocam.Session, from int64) error {
	var version int64
	var uid string
	err := tx.QueryRowContext(ctx, `SELECT version, uid FROM sessions WHERE tenant = ? AND id = ?`, s.Tenant, s.ID).Scan(&version, &uid)
	if errors.Is(err, sql.ErrNoRows) {
		return sqlstore.SessionNotFound(s.ID)
	} else if err != nil {
		return err
	}
	if uid != s.UID {
		return sqlstore.SessionRecreated(s.ID)
	}
	return sqlstore.VersionConflict(s.ID, version, from)
}

// commitTx is sqlstore.Tx in SQLite: one commit's statements against one session's messages.
type commitTx struct {
	db              *DB
	tx              *sql.Tx
	tenant, session string
}

// The statements of a commit that Open prepares (hotStatements).
const (
	contextEndQuery = `SELECT pos + 1 FROM messages WHERE tenant = ? AND session_id = ? AND parent = ''
		ORDER BY pos DESC LIMIT 1`
	insertMessage = `INSERT INTO messages (tenant, session_id, parent, pos, ` + sqlstore.MessageColumns + `)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (tenant, session_id, id) DO NOTHING`
	insertSearch = `INSERT INTO message_search (rowid, scope, body) VALUES (?, ?, ?)`
)

// ContextEnd orders by position and takes the last rather than asking for MAX, which the
// planner may answer by scanning the whole context.
func (c *commitTx) ContextEnd(ctx context.Context) (int64, error) {
	var next int64
	err := c.db.inTx(ctx, c.tx, contextEndQuery).QueryRowContext(ctx, c.tenant, c.session).Scan(&next)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return next, err
}

func (c *commitTx) Insert(ctx context.Context, m *hippocam.Message, parent string, pos int64) (bool, error) {
	args, err := sqlstore.MessageArgs[string](m)
	if err != nil {
		return false, err
	}
	res, err := c.db.inTx(ctx, c.tx, insertMessage).ExecContext(ctx, append([]any{c.tenant, c.session, parent, pos}, args...)...)
	if err != nil {
		return false, err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return false, err
	}
	if !hippocam.Searchable(m) {
		return true, nil
	}
	seq, err := res.LastInsertId()
	if err != nil {
		return false, err
	}
	// The index row goes in with the message, in the commit's transaction.
	_, err = c.db.inTx(ctx, c.tx, insertSearch).ExecContext(ctx, seq, searchScope(c.tenant, c.session), hippocam.SearchText(m))
	return err == nil, err
}

func (c *commitTx) Taken(ctx context.Context, id, ref string) (idTaken, refTaken bool, err error) {
	err = c.tx.QueryRowContext(ctx, `SELECT
		EXISTS (SELECT 1 FROM messages WHERE tenant = ?1 AND session_id = ?2 AND id = ?3),
		EXISTS (SELECT 1 FROM messages WHERE tenant = ?1 AND session_id = ?2 AND ref = ?4 AND ref <> '')`,
		c.tenant, c.session, id, ref).Scan(&idTaken, &refTaken)
	return idTaken, refTaken, err
}

// Locate looks the whole span up in one query, passing it as a JSON array to json_each.
func (c *commitTx) Locate(ctx context.Context, span []string, fn func(id string, inContext bool, pos int64) error) error {
	ids, err := json.Marshal(span)
	if err != nil {
		return err
	}
	rows, err := c.tx.QueryContext(ctx, `SELECT j.value, m.parent, m.pos FROM json_each(?1) AS j
		LEFT JOIN messages AS m ON m.tenant = ?2 AND m.session_id = ?3 AND m.id = j.value
		ORDER BY j.key`, string(ids), c.tenant, c.session)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var parent sql.NullString
		var pos sql.NullInt64
		if err := rows.Scan(&id, &parent, &pos); err != nil {
			return err
		}
		if err := fn(id, parent.Valid && parent.String == "", pos.Int64); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (c *commitTx) ContextCount(ctx context.Context, first, last int64) (int, error) {
	var n int
	err := c.tx.QueryRowContext(ctx, `SELECT count(*) FROM messages
		WHERE tenant = ? AND session_id = ? AND parent = '' AND pos BETWEEN ? AND ?`,
		c.tenant, c.session, first, last).Scan(&n)
	return n, err
}

func (c *commitTx) Archive(ctx context.Context, ref string, span []string) error {
	move, err := c.tx.PrepareContext(ctx, `UPDATE messages SET parent = ?, pos = ? WHERE tenant = ? AND session_id = ? AND id = ?`)
	if err != nil {
		return err
	}
	defer move.Close()
	for k, id := range span {
		if _, err := move.ExecContext(ctx, ref, k, c.tenant, c.session, id); err != nil {
			return err
		}
	}
	return nil
}
