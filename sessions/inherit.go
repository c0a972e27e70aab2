package sessions

import (
	"context"

	"github.com/hippocam/hippocam"
)

// tree reads a stored session's message tree once: every archive node its context reaches, and
// the count of transcript messages beneath each consolidated message.
type tree struct {
	a     hippocam.Archive
	kids  map[string][]hippocam.Message
	count map[string]int // ref → transcript messages beneath it
}

// readTree reads the whole tree beneath context from a.
func readTree(ctx context.Context, a hippocam.Archive, context []hippocam.Message) (*tree, error) {
	t := &tree{a: a, kids: map[string][]hippocam.Message{}, count: map[string]int{}}
	for i := range context {
		if _, err := t.size(ctx, &context[i]); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// size returns how many transcript messages m stands for (Transcript's rule: raw messages count,
// framing versions and regenerated answers do not, a memory counts what it consolidates), and
// reads the nodes beneath it.
func (t *tree) size(ctx context.Context, m *hippocam.Message) (int, error) {
	if m.Ref != "" {
		if _, ok := t.kids[m.Ref]; !ok {
			kids, err := t.a.Children(ctx, m.Ref)
			if err != nil {
				return 0, err
			}
			t.kids[m.Ref] = kids
			n := 0
			for i := range kids {
				k, err := t.size(ctx, &kids[i])
				if err != nil {
					return 0, err
				}
				n += k
			}
			t.count[m.Ref] = n
		}
		if m.Kind.Hidden() {
			return 0, nil
		}
		return t.count[m.Ref], nil
	}
	if m.Kind == hippocam.KindRaw {
		return 1, nil
	}
	return 0, nil
}

// transcript returns the raw transcript messages beneath context, in order (Transcript).
func (t *tree) transcript(context []hippocam.Message) []hippocam.Message {
	var out []hippocam.Message
	var walk func([]hippocam.Message)
	walk = func(ms []hippocam.Message) {
		for _, m := range ms {
			switch {
			case m.Kind.Hidden():
			case m.Consolidated():
				walk(t.kids[m.Ref])
			case m.Kind == hippocam.KindRaw:
				out = append(out, m)
			}
		}
	}
	walk(context)
	return out
}

// inheritance is what a fork takes over from its parent instead of importing it again: the
// parent's context cut where the fork's history leaves it, with every node beneath it.
type inheritance struct {
	// context is the fork's first context; held the transcript messages it stands for (the
	// history's first held messages).
	context []hippocam.Message
	held    int
	// ops rebuild context and its tree in the fork's store: each node's messages appended, then
	// replaced by the message that holds them, innermost first, with the parent's ids and refs.
	ops []hippocam.Op
	// nodes and msgs are the copied tree, by ref and by id: the fork's archive before its first
	// commit stores them.
	nodes map[string][]hippocam.Message
	msgs  map[string]hippocam.Message
}

// cut returns the longest front of the parent's context that stands for at most at transcript
// messages, with no memory split: a memory whose span reaches past at is opened (its children
// stand in its place, as they stood in the context before it was formed) and cut in turn, down
// to the raw messages. Recall exchanges are left out (they are Hippocam's, not the agent's, and
// only stand in a context while an answer is made). Nil when nothing would be held.
func (t *tree) cut(context []hippocam.Message, at int) *inheritance {
	in := &inheritance{nodes: map[string][]hippocam.Message{}, msgs: map[string]hippocam.Message{}}
	var take func([]hippocam.Message)
	take = func(ms []hippocam.Message) {
		for i := range ms {
			m := &ms[i]
			if in.held == at {
				return
			}
			if m.Kind == hippocam.KindRecall {
				continue
			}
			n := 1
			switch {
			case m.Kind.Hidden():
				n = 0
			case m.Consolidated():
				n = t.count[m.Ref]
			case m.Kind != hippocam.KindRaw:
				n = 0
			}
			if in.held+n <= at {
				in.context = append(in.context, *m)
				in.held += n
				continue
			}
			// A memory that straddles the cut: open it.
			take(t.kids[m.Ref])
			return
		}
	}
	take(context)
	if in.held == 0 {
		return nil
	}
	for i := range in.context {
		in.copy(t, in.context[i])
	}
	return in
}

// copy adds the ops that rebuild m and its tree at the end of the fork's context.
func (in *inheritance) copy(t *tree, m hippocam.Message) {
	in.msgs[m.ID] = m
	if m.Ref == "" {
		in.ops = append(in.ops, hippocam.AppendOp(m))
		return
	}
	kids := t.kids[m.Ref]
	in.nodes[m.Ref] = kids
	span := make([]string, len(kids))
	for i, k := range kids {
		in.copy(t, k)
		span[i] = k.ID
	}
	in.ops = append(in.ops, hippocam.ReplaceOp(span, m))
}

// stack returns the intents of the parent's stack that the fork had open at its point: the
// broadest ones, up to the first that began after the cut. An intent still open in the parent
// that began before the cut was open there; intents that were open there and closed later in the
// parent are gone from its stack and cannot be known, so the fork starts without them.
func (in *inheritance) stack(parent hippocam.IntentStack) hippocam.IntentStack {
	var out hippocam.IntentStack
	for _, it := range parent {
		if _, ok := in.msgs[it.Start]; !ok {
			break
		}
		out = append(out, it)
	}
	return out
}

// framing returns the framing in effect at the cut: the messages of the last framing version
// marked in the inherited tree, memories' layers included (nil when none is marked, or the last
// version is empty).
func (in *inheritance) framing() []hippocam.Message {
	var out []hippocam.Message
	var walk func([]hippocam.Message)
	walk = func(ms []hippocam.Message) {
		for _, m := range ms {
			switch {
			case m.Kind == hippocam.KindFraming:
				out = in.nodes[m.Ref] // nil for an empty version (a mark with no ref)
			case m.Kind == hippocam.KindBranch:
			case m.Ref != "":
				walk(in.nodes[m.Ref])
			}
		}
	}
	walk(in.context)
	return out
}

// forkArchive is a fork's archive during its first step, before the inherited tree is stored
// with the step's commit: the copied nodes and messages first, then the fork's own archive.
// Search reaches the inherited messages through the parent's index, kept to the messages copied.
type forkArchive struct {
	own, parent hippocam.Archive
	in          *inheritance
}

func (a forkArchive) Children(ctx context.Context, ref string) ([]hippocam.Message, error) {
	if kids, ok := a.in.nodes[ref]; ok {
		return kids, nil
	}
	return a.own.Children(ctx, ref)
}

func (a forkArchive) Message(ctx context.Context, id string) (*hippocam.Message, error) {
	if m, ok := a.in.msgs[id]; ok {
		return &m, nil
	}
	return a.own.Message(ctx, id)
}

func (a forkArchive) Search(ctx context.Context, query string, limit int) ([]hippocam.SearchHit, error) {
	hits, err := a.own.Search(ctx, query, limit)
	if err != nil && hippocam.ErrorCode(err) != hippocam.ENOTFOUND {
		return nil, err
	}
	if len(hits) >= limit {
		return hits, nil
	}
	// The parent's index may hold messages past the cut: ask for more and keep the copied.
	more, err := a.parent.Search(ctx, query, limit*4)
	if err != nil {
		if hippocam.ErrorCode(err) == hippocam.ENOTFOUND {
			return hits, nil // the parent was deleted meanwhile
		}
		return nil, err
	}
	for _, h := range more {
		if _, ok := a.in.msgs[h.Message.ID]; !ok {
			continue
		}
		hits = append(hits, h)
		if len(hits) == limit {
			break
		}
	}
	return hits, nil
}
