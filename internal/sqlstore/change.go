package sqlstore

import (
	"context"

	"github.com/hippocam/hippocam"
)

// Tx runs, inside one commit's transaction, the statements Apply needs against the messages of
// one session. Each store implements it in its own SQL. Its errors are the driver's; Apply
// passes them on as they are.
type Tx interface {
	// ContextEnd returns the position after the context's last message: 0 for an empty context.
	ContextEnd(ctx context.Context) (int64, error)
	// Insert stores m at pos beneath parent ("" for the context), with its entry in the
	// store's search index when hippocam.Searchable(m), and reports whether it did: false, and
	// no error, if the session already has a message with m's id. EINVALID if a field of m does
	// not encode.
	Insert(ctx context.Context, m *hippocam.Message, parent string, pos int64) (bool, error)
	// Taken reports whether the session already has a message with id, and one with ref.
	Taken(ctx context.Context, id, ref string) (idTaken, refTaken bool, err error)
	// Locate calls fn once for each id of span, in order, with whether the message is in the
	// context and, if so, its position. It stops at fn's first error and returns it.
	Locate(ctx context.Context, span []string, fn func(id string, inContext bool, pos int64) error) error
	// ContextCount returns how many context messages sit at positions first to last.
	ContextCount(ctx context.Context, first, last int64) (int, error)
	// Archive moves the messages of span beneath ref, at positions 0 to len(span)-1 in span
	// order. Their own archived children go with them: those hang beneath the messages' refs,
	// which do not change.
	Archive(ctx context.Context, ref string, span []string) error
}

// Apply checks each of ops against the context as the ops before it left it, and applies it
// through tx. EINVALID for an op that is malformed, or that names a message not in the context
// or an id or ref the session already has; any other error comes from tx. On an error the
// caller must roll tx back: ops before the failing one have been applied.
//
// An append takes the context position after the last one. A replace moves the span beneath
// the memory's ref, numbered from 0, and puts the memory at the position of the span's first
// message; the rest of the context keeps its positions, so positions may have gaps.
func Apply(ctx context.Context, tx Tx, ops []hippocam.Op) error {
	c := &change{tx: tx, next: -1}
	for i, op := range ops {
		if err := c.apply(ctx, i, op); err != nil {
			return err
		}
	}
	return nil
}

// ContextGrowth returns how many messages ops add to the context (fewer than zero when their
// replaces fold more than they append), assuming they are valid.
func ContextGrowth(ops []hippocam.Op) int {
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

// change is the state of one Apply.
type change struct {
	tx   Tx
	next int64 // the next append's context position; -1 until read
}

// apply checks op i and applies it.
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
		next, err := c.tx.ContextEnd(ctx)
		if err != nil {
			return err
		}
		c.next = next
	}
	if ok, err := c.tx.Insert(ctx, m, "", c.next); err != nil {
		return err
	} else if !ok {
		return hippocam.Errorf(hippocam.EINVALID, "op %d: append %s: the session already has a message with this id", i, m.ID)
	}
	c.next++
	return nil
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
	idTaken, refTaken, err := c.tx.Taken(ctx, mem.ID, mem.Ref)
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
	if err := c.tx.Archive(ctx, mem.Ref, span); err != nil {
		return err
	}
	_, err = c.tx.Insert(ctx, mem, "", first)
	return err
}

// checkSpan checks that span names, in order, a run of consecutive context messages, and
// returns the context position of its first message.
func (c *change) checkSpan(ctx context.Context, i int, span []string) (int64, error) {
	var first, last int64 = -1, -1
	err := c.tx.Locate(ctx, span, func(id string, inContext bool, pos int64) error {
		switch {
		case !inContext:
			return hippocam.Errorf(hippocam.EINVALID, "op %d: replace: message %s is not in the context", i, id)
		case last >= 0 && pos <= last:
			return hippocam.Errorf(hippocam.EINVALID, "op %d: replace: the span is not in context order (at %s)", i, id)
		case first < 0:
			first = pos
		}
		last = pos
		return nil
	})
	if err != nil {
		return 0, err
	}
	n, err := c.tx.ContextCount(ctx, first, last)
	if err != nil {
		return 0, err
	}
	if n != len(span) {
		return 0, hippocam.Errorf(hippocam.EINVALID, "op %d: replace: the span skips %d message(s) of the context", i, n-len(span))
	}
	return first, nil
}
