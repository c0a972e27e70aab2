package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hippocam/hippocam"
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
	err = db.writeTx(ctx, func(tx *sql.Tx) error {
		// Bump the version first: the row is the commit's claim on the session.
		res, err := tx.ExecContext(ctx, `UPDATE sessions SET version = version + 1, seq = ?, stack = ?, stack_log = ?,
			rounds = ?, usage = ?, consolidations = ?, transcript = ?, depth = ?, messages = messages + ?, updated_at = ?
			WHERE tenant = ? AND id = ? AND version = ?`,
			s.Seq, snap.stack, snap.stackLog, snap.rounds, snap.usage, snap.consolidations, snap.transcript, len(s.Stack),
			contextGrowth(ch.Ops), now.UnixMicro(), s.Tenant, s.ID, ch.From)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
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
		return fmt.Errorf("sqlite: commit %s: %w", s.ID, err)
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
func versionError(ctx context.Context, tx *sql.Tx, tenant, id string, from int64) error {
	var version int64
	err := tx.QueryRowContext(ctx, `SELECT version FROM sessions WHERE tenant = ? AND id = ?`, tenant, id).Scan(&version)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound(id)
	} else if err != nil {
		return err
	}
	return hippocam.Errorf(hippocam.ECONFLICT, "session %q is at version %d, not %d", id, version, from)
}

// change applies the ops of one commit inside its transaction.
type change struct {
	tx              *sql.Tx
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
	err := c.tx.QueryRowContext(ctx, `SELECT pos + 1 FROM messages WHERE tenant = ? AND session_id = ? AND parent = ''
		ORDER BY pos DESC LIMIT 1`, c.tenant, c.session).Scan(&c.next)
	if errors.Is(err, sql.ErrNoRows) {
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
	res, err := c.tx.ExecContext(ctx, `INSERT INTO messages (tenant, session_id, parent, pos, `+messageColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (tenant, session_id, id) DO NOTHING`,
		append([]any{c.tenant, c.session, parent, pos}, args...)...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
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
	err := c.tx.QueryRowContext(ctx, `SELECT
		EXISTS (SELECT 1 FROM messages WHERE tenant = ?1 AND session_id = ?2 AND id = ?3),
		EXISTS (SELECT 1 FROM messages WHERE tenant = ?1 AND session_id = ?2 AND ref = ?4 AND ref <> '')`,
		c.tenant, c.session, mem.ID, mem.Ref).Scan(&idTaken, &refTaken)
	switch {
	case err != nil:
		return err
	case idTaken:
		return hippocam.Errorf(hippocam.EINVALID, "op %d: replace: the session already has a message %s", i, mem.ID)
	case refTaken:
		return hippocam.Errorf(hippocam.EINVALID, "op %d: replace: the session already has a ref %s", i, mem.Ref)
	}
	ids, err := json.Marshal(span)
	if err != nil {
		return err
	}
	first, err := c.checkSpan(ctx, i, span, string(ids))
	if err != nil {
		return err
	}
	// Move the span beneath the fresh ref, numbered in span order; their own children follow
	// them, since those point at the span messages' refs, which do not change.
	move, err := c.tx.PrepareContext(ctx, `UPDATE messages SET parent = ?, pos = ? WHERE tenant = ? AND session_id = ? AND id = ?`)
	if err != nil {
		return err
	}
	defer move.Close()
	for k, id := range span {
		if _, err := move.ExecContext(ctx, mem.Ref, k, c.tenant, c.session, id); err != nil {
			return err
		}
	}
	if _, err := c.insert(ctx, mem, "", first); err != nil {
		return err
	}
	return nil
}

// checkSpan checks that span names, in order, a run of consecutive context messages, and
// returns the context position of its first message. ids is span as a JSON array.
func (c *change) checkSpan(ctx context.Context, i int, span []string, ids string) (int64, error) {
	rows, err := c.tx.QueryContext(ctx, `SELECT j.value, m.parent, m.pos FROM json_each(?1) AS j
		LEFT JOIN messages AS m ON m.tenant = ?2 AND m.session_id = ?3 AND m.id = j.value
		ORDER BY j.key`, ids, c.tenant, c.session)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var first, last int64 = -1, -1
	for rows.Next() {
		var id string
		var parent sql.NullString
		var pos sql.NullInt64
		if err := rows.Scan(&id, &parent, &pos); err != nil {
			return 0, err
		}
		switch {
		case !parent.Valid || parent.String != "":
			return 0, hippocam.Errorf(hippocam.EINVALID, "op %d: replace: message %s is not in the context", i, id)
		case last >= 0 && pos.Int64 <= last:
			return 0, hippocam.Errorf(hippocam.EINVALID, "op %d: replace: the span is not in context order (at %s)", i, id)
		case first < 0:
			first = pos.Int64
		}
		last = pos.Int64
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	var n int
	if err := c.tx.QueryRowContext(ctx, `SELECT count(*) FROM messages
		WHERE tenant = ? AND session_id = ? AND parent = '' AND pos BETWEEN ? AND ?`,
		c.tenant, c.session, first, last).Scan(&n); err != nil {
		return 0, err
	}
	if n != len(span) {
		return 0, hippocam.Errorf(hippocam.EINVALID, "op %d: replace: the span skips %d message(s) of the context", i, n-len(span))
	}
	return first, nil
}
