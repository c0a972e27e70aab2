package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/internal/sqlstore"
	"github.com/jackc/pgx/v5"
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
	snap, err := sqlstore.EncodeSnapshot[[]byte](s)
	if err != nil {
		return err
	}
	now := db.now()
	err = pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		// Bump the version first: the row lock is the commit's claim on the session. A racing
		// commit from the same version waits here, then finds the version moved.
		tag, err := tx.Exec(ctx, `UPDATE sessions SET version = version + 1, seq = $1, stack = $2, stack_log = $3,
			rounds = $4, usage = $5, consolidations = $6, transcript = $7, depth = $8, messages = messages + $9,
			updated_at = $10, head = $14, prev_head = $15, fork = $16, pending = $17, client = $19 WHERE tenant = $11 AND id = $12 AND version = $13 AND uid = $18`,
			s.Seq, snap.Stack, snap.StackLog, snap.Rounds, snap.Usage, snap.Consolidations, snap.Transcript, len(s.Stack),
			sqlstore.ContextGrowth(ch.Ops), now, s.Tenant, s.ID, ch.From,
			s.Transcript.Hash, s.Transcript.PrevHash, sqlstore.ForkColumn(s), snap.Pending, s.UID, sqlstore.ClientColumn(s))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return versionError(ctx, tx, s, ch.From)
		}
		if err := sqlstore.Apply(ctx, &commitTx{tx: tx, tenant: s.Tenant, session: s.ID}, ch.Ops); err != nil {
			return err
		}
		return enqueueJobs(ctx, tx, s.Tenant, s.ID, ch.Jobs)
	})
	if err != nil {
		if hippocam.ErrorCode(err) != hippocam.EINTERNAL {
			return err
		}
		return fmt.Errorf("postgres: commit %s: %w", s.ID, err)
	}
	s.Version, s.UpdatedAt = ch.From+1, now
	return nil
}

// versionError tells a session that is gone (ENOTFOUND) from one at another version or created
// again since s was loaded (ECONFLICT).
func versionError(ctx context.Context, tx pgx.Tx, s *hippocam.Session, from int64) error {
	var version int64
	var uid string
	err := tx.QueryRow(ctx, `SELECT version, uid FROM sessions WHERE tenant = $1 AND id = $2`, s.Tenant, s.ID).Scan(&version, &uid)
	if errors.Is(err, pgx.ErrNoRows) {
		return sqlstore.SessionNotFound(s.ID)
	} else if err != nil {
		return err
	}
	if uid != s.UID {
		return sqlstore.SessionRecreated(s.ID)
	}
	return sqlstore.VersionConflict(s.ID, version, from)
}

// commitTx is sqlstore.Tx in PostgreSQL: one commit's statements against one session's
// messages. Span lookups go one id at a time, batched into one round trip: a lookup by the
// whole primary key is the one plan the planner cannot get wrong before the table has
// statistics.
type commitTx struct {
	tx              pgx.Tx
	tenant, session string
}

// ContextEnd orders by position and takes the last rather than asking for MAX, which the
// planner may answer by scanning the whole context.
func (c *commitTx) ContextEnd(ctx context.Context) (int64, error) {
	var next int64
	err := c.tx.QueryRow(ctx, `SELECT pos + 1 FROM messages WHERE tenant = $1 AND session_id = $2 AND parent = ''
		ORDER BY pos DESC LIMIT 1`, c.tenant, c.session).Scan(&next)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return next, err
}

func (c *commitTx) Insert(ctx context.Context, m *hippocam.Message, parent string, pos int64) (bool, error) {
	args, err := sqlstore.MessageArgs[[]byte](m)
	if err != nil {
		return false, err
	}
	// terms, the message's entry in the search index, is written with the row (search.go).
	var terms any
	if hippocam.Searchable(m) {
		terms = searchTerms(c.tenant, c.session, m)
	}
	tag, err := c.tx.Exec(ctx, `INSERT INTO messages (tenant, session_id, parent, pos, `+sqlstore.MessageColumns+`, terms)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, strip(to_tsvector('simple', $17::text)))
		ON CONFLICT (tenant, session_id, id) DO NOTHING`,
		append(append([]any{c.tenant, c.session, parent, pos}, args...), terms)...)
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() == 1, nil
}

func (c *commitTx) Taken(ctx context.Context, id, ref string) (idTaken, refTaken bool, err error) {
	err = c.tx.QueryRow(ctx, `SELECT
		EXISTS (SELECT 1 FROM messages WHERE tenant = $1 AND session_id = $2 AND id = $3),
		EXISTS (SELECT 1 FROM messages WHERE tenant = $1 AND session_id = $2 AND ref = $4 AND ref <> '')`,
		c.tenant, c.session, id, ref).Scan(&idTaken, &refTaken)
	return idTaken, refTaken, err
}

func (c *commitTx) Locate(ctx context.Context, span []string, fn func(id string, inContext bool, pos int64) error) error {
	var find pgx.Batch
	for _, id := range span {
		find.Queue(`SELECT parent, pos FROM messages WHERE tenant = $1 AND session_id = $2 AND id = $3`, c.tenant, c.session, id)
	}
	res := c.tx.SendBatch(ctx, &find)
	defer res.Close()
	for _, id := range span {
		var parent string
		var pos int64
		err := res.QueryRow().Scan(&parent, &pos)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if err := fn(id, err == nil && parent == "", pos); err != nil {
			return err
		}
	}
	return res.Close()
}

func (c *commitTx) ContextCount(ctx context.Context, first, last int64) (int, error) {
	var n int
	err := c.tx.QueryRow(ctx, `SELECT count(*) FROM messages
		WHERE tenant = $1 AND session_id = $2 AND parent = '' AND pos BETWEEN $3 AND $4`,
		c.tenant, c.session, first, last).Scan(&n)
	return n, err
}

func (c *commitTx) Archive(ctx context.Context, ref string, span []string) error {
	var move pgx.Batch
	for k, id := range span {
		move.Queue(`UPDATE messages SET parent = $1, pos = $2 WHERE tenant = $3 AND session_id = $4 AND id = $5`,
			ref, k, c.tenant, c.session, id)
	}
	return c.tx.SendBatch(ctx, &move).Close()
}
