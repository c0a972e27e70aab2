package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/hippocam/hippocam"
	"github.com/jackc/pgx/v5"
)

// Commit applies ch to the stored session and stores s's snapshot fields, in one transaction;
// on success it sets s.Version to ch.From+1 and s.UpdatedAt. ECONFLICT if the stored version is
// not ch.From; ENOTFOUND if the session is gone; EINVALID if an op is malformed or names a
// message that is not in the context. A failed commit changes nothing.
//
// Appends take the context position after the last one. A replace puts the memory at the
// position of the span's first message and renumbers the span 0..n-1 beneath the memory's ref;
// the rest of the context keeps its positions, so context positions have gaps.
func (db *DB) Commit(ctx context.Context, s *hippocam.Session, ch hippocam.Change) error {
	if s == nil {
		return hippocam.Errorf(hippocam.EINVALID, "commit: no session")
	}
	snap, err := encodeSnapshot(s)
	if err != nil {
		return err
	}
	now := db.now()
	err = pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		// Bump the version first: the row lock is the commit's claim on the session. A racing
		// commit from the same version waits here, then finds the version moved.
		tag, err := tx.Exec(ctx, `UPDATE sessions SET version = version + 1, seq = $1, stack = $2, stack_log = $3,
			rounds = $4, usage = $5, consolidations = $6, transcript = $7, depth = $8, messages = messages + $9,
			updated_at = $10 WHERE tenant = $11 AND id = $12 AND version = $13`,
			s.Seq, snap.stack, snap.stackLog, snap.rounds, snap.usage, snap.consolidations, snap.transcript, len(s.Stack),
			contextGrowth(ch.Ops), now, s.Tenant, s.ID, ch.From)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return versionError(ctx, tx, s.Tenant, s.ID, ch.From)
		}
		c := &change{tx: tx, tenant: s.Tenant, session: s.ID, next: -1}
		for i, op := range ch.Ops {
			if err := c.apply(ctx, i, op); err != nil {
				return err
			}
		}
		return nil
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

// contextGrowth is how many messages ops add to the context, if they are valid.
func contextGrowth(ops []hippocam.Op) int {
	n := 0
	for _, op := range ops {
		if op.Append != nil {
			n++
		} else {
			n += 1 - len(op.Span)
		}
	}
	return n
}

// versionError tells a session that is gone (ENOTFOUND) from one at another version (ECONFLICT).
func versionError(ctx context.Context, tx pgx.Tx, tenant, id string, from int64) error {
	var version int64
	err := tx.QueryRow(ctx, `SELECT version FROM sessions WHERE tenant = $1 AND id = $2`, tenant, id).Scan(&version)
	if errors.Is(err, pgx.ErrNoRows) {
		return notFound(id)
	} else if err != nil {
		return err
	}
	return hippocam.Errorf(hippocam.ECONFLICT, "session %q is at version %d, not %d", id, version, from)
}

// change applies the ops of one commit inside its transaction.
type change struct {
	tx              pgx.Tx
	tenant, session string
	next            int64 // the next append's context position; -1 until read
}

// apply checks op i against the context as the earlier ops left it, and applies it.
func (c *change) apply(ctx context.Context, i int, op hippocam.Op) error {
	switch {
	case op.Append != nil && (op.Memory != nil || len(op.Span) > 0):
		return hippocam.Errorf(hippocam.EINVALID, "op %d: an op either appends or replaces, not both", i)
	case op.Append != nil:
		return c.append(ctx, i, op.Append)
	case op.Memory == nil && len(op.Span) == 0:
		return hippocam.Errorf(hippocam.EINVALID, "op %d is empty", i)
	}
	return c.replace(ctx, i, op.Span, op.Memory)
}

func (c *change) append(ctx context.Context, i int, m *hippocam.Message) error {
	switch {
	case m.ID == "":
		return hippocam.Errorf(hippocam.EINVALID, "op %d: append: the message has no id", i)
	case m.Ref != "":
		return hippocam.Errorf(hippocam.EINVALID, "op %d: append %s: a message with a ref enters the context only by a replace", i, m.ID)
	}
	if c.next < 0 {
		if err := c.readNext(ctx); err != nil {
			return err
		}
	}
	if ok, err := c.insert(ctx, m, "", c.next); err != nil {
		return err
	} else if !ok {
		return hippocam.Errorf(hippocam.EINVALID, "op %d: append %s: the session already has a message with this id", i, m.ID)
	}
	c.next++
	return nil
}

// readNext sets c.next to the position after the context's last message. (ORDER BY … LIMIT 1
// rather than MAX, which the planner may answer by scanning the whole context.)
func (c *change) readNext(ctx context.Context) error {
	err := c.tx.QueryRow(ctx, `SELECT pos + 1 FROM messages WHERE tenant = $1 AND session_id = $2 AND parent = ''
		ORDER BY pos DESC LIMIT 1`, c.tenant, c.session).Scan(&c.next)
	if errors.Is(err, pgx.ErrNoRows) {
		c.next = 0
		return nil
	}
	return err
}

// insert stores m at pos beneath parent, unless the session has a message with m's id.
func (c *change) insert(ctx context.Context, m *hippocam.Message, parent string, pos int64) (bool, error) {
	args, err := messageArgs(m)
	if err != nil {
		return false, hippocam.Errorf(hippocam.EINVALID, "message %s: %v", m.ID, err)
	}
	tag, err := c.tx.Exec(ctx, `INSERT INTO messages (tenant, session_id, parent, pos, `+messageColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
		ON CONFLICT (tenant, session_id, id) DO NOTHING`,
		append([]any{c.tenant, c.session, parent, pos}, args...)...)
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() == 1, nil
}

func (c *change) replace(ctx context.Context, i int, span []string, mem *hippocam.Message) error {
	switch {
	case mem == nil:
		return hippocam.Errorf(hippocam.EINVALID, "op %d: replace: no memory", i)
	case len(span) == 0:
		return hippocam.Errorf(hippocam.EINVALID, "op %d: replace: the span is empty", i)
	case mem.ID == "" || mem.Ref == "":
		return hippocam.Errorf(hippocam.EINVALID, "op %d: replace: the memory needs an id and a ref", i)
	}
	var idTaken, refTaken bool
	err := c.tx.QueryRow(ctx, `SELECT
		EXISTS (SELECT 1 FROM messages WHERE tenant = $1 AND session_id = $2 AND id = $3),
		EXISTS (SELECT 1 FROM messages WHERE tenant = $1 AND session_id = $2 AND ref = $4 AND ref <> '')`,
		c.tenant, c.session, mem.ID, mem.Ref).Scan(&idTaken, &refTaken)
	switch {
	case err != nil:
		return err
	case idTaken:
		return hippocam.Errorf(hippocam.EINVALID, "op %d: replace: the session already has a message %s", i, mem.ID)
	case refTaken:
		return hippocam.Errorf(hippocam.EINVALID, "op %d: replace: the session already has a ref %s", i, mem.Ref)
	}
	first, err := c.checkSpan(ctx, i, span)
	if err != nil {
		return err
	}
	// Move the span beneath the fresh ref, numbered in span order; their own children follow
	// them, since those point at the span messages' refs, which do not change.
	var move pgx.Batch
	for k, id := range span {
		move.Queue(`UPDATE messages SET parent = $1, pos = $2 WHERE tenant = $3 AND session_id = $4 AND id = $5`,
			mem.Ref, k, c.tenant, c.session, id)
	}
	if err := c.tx.SendBatch(ctx, &move).Close(); err != nil {
		return err
	}
	_, err = c.insert(ctx, mem, "", first)
	return err
}

// checkSpan checks that span names, in order, a run of consecutive context messages, and
// returns the context position of its first message. (It and replace look messages up one id
// at a time, in one round trip: a lookup by the whole primary key is the one plan the planner
// cannot get wrong before the table has statistics.)
func (c *change) checkSpan(ctx context.Context, i int, span []string) (int64, error) {
	var find pgx.Batch
	for _, id := range span {
		find.Queue(`SELECT parent, pos FROM messages WHERE tenant = $1 AND session_id = $2 AND id = $3`, c.tenant, c.session, id)
	}
	res := c.tx.SendBatch(ctx, &find)
	defer res.Close()
	var first, last int64 = -1, -1
	for _, id := range span {
		var parent string
		var pos int64
		err := res.QueryRow().Scan(&parent, &pos)
		switch {
		case errors.Is(err, pgx.ErrNoRows) || err == nil && parent != "":
			return 0, hippocam.Errorf(hippocam.EINVALID, "op %d: replace: message %s is not in the context", i, id)
		case err != nil:
			return 0, err
		case last >= 0 && pos <= last:
			return 0, hippocam.Errorf(hippocam.EINVALID, "op %d: replace: the span is not in context order (at %s)", i, id)
		case first < 0:
			first = pos
		}
		last = pos
	}
	if err := res.Close(); err != nil {
		return 0, err
	}
	var n int
	if err := c.tx.QueryRow(ctx, `SELECT count(*) FROM messages
		WHERE tenant = $1 AND session_id = $2 AND parent = '' AND pos BETWEEN $3 AND $4`,
		c.tenant, c.session, first, last).Scan(&n); err != nil {
		return 0, err
	}
	if n != len(span) {
		return 0, hippocam.Errorf(hippocam.EINVALID, "op %d: replace: the span skips %d message(s) of the context", i, n-len(span))
	}
	return first, nil
}
