package storetest

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/hippocam/hippocam"
	"pgregory.net/rapid"
)

// testLossless checks the lossless invariant (docs/architecture.md §2) against a model: after any
// sequence of commits of appends and valid replaces, including replaces that swallow earlier
// memories, the store's context is the model's, every ref holds the model's children, and
// expanding the context yields every message that entered it, in order. Invalid commits, mixed
// with valid ops, must leave everything as it was.
func testLossless(t *testing.T, open func(t *testing.T) hippocam.Store) {
	st := open(t)
	n := 0
	rapid.Check(t, func(rt *rapid.T) {
		n++
		m := &model{st: st, archive: map[string][]hippocam.Message{}}
		m.s = &hippocam.Session{Tenant: "acme", ID: fmt.Sprintf("s%d", n)}
		if err := st.CreateSession(rt.Context(), m.s); err != nil {
			rt.Fatal(err)
		}
		rt.Repeat(map[string]func(*rapid.T){
			"commit":  m.commit,
			"invalid": m.invalid,
			"":        m.check,
		})
		m.checkChildren(rt, slices.Sorted(maps.Keys(m.archive)))
	})
}

// model is the reference the store is compared with: a context, an archive and the list of
// every message that entered the context.
type model struct {
	st      hippocam.Store
	s       *hippocam.Session
	context []hippocam.Message
	archive map[string][]hippocam.Message
	entered []hippocam.Message
	seq     int
	fresh   []string // refs created since the last check
}

// work is a model's state while the ops of one commit are drawn.
type work struct {
	context []hippocam.Message
	archive map[string][]hippocam.Message
	entered []hippocam.Message
}

func (m *model) begin() *work {
	return &work{context: slices.Clone(m.context), archive: map[string][]hippocam.Message{}, entered: slices.Clone(m.entered)}
}

func (m *model) nextID(prefix string) string {
	m.seq++
	return fmt.Sprintf("%s%d", prefix, m.seq)
}

// drawOp draws a valid append or replace against w and applies it to w.
func (m *model) drawOp(rt *rapid.T, w *work) hippocam.Op {
	if len(w.context) == 0 || rapid.IntRange(0, 2).Draw(rt, "append?") == 0 {
		msg := hippocam.Message{
			ID:      m.nextID("m"),
			Role:    rapid.SampledFrom([]hippocam.Role{hippocam.RoleUser, hippocam.RoleAssistant, hippocam.RoleTool}).Draw(rt, "role"),
			Kind:    hippocam.KindRaw,
			Content: rapid.String().Draw(rt, "content"),
			Tokens:  rapid.IntRange(0, 5000).Draw(rt, "tokens"),
		}
		w.context = append(w.context, msg)
		w.entered = append(w.entered, msg)
		return hippocam.AppendOp(msg)
	}
	i := rapid.IntRange(0, len(w.context)-1).Draw(rt, "from")
	j := rapid.IntRange(i+1, min(len(w.context), i+8)).Draw(rt, "to")
	ref := m.nextID("r")
	mem := hippocam.Message{
		ID: m.nextID("m"), Role: hippocam.RoleUser, Ref: ref,
		Kind:    rapid.SampledFrom([]hippocam.Kind{hippocam.KindIntentMemory, hippocam.KindPrefixMemory}).Draw(rt, "kind"),
		Content: "memory " + hippocam.RefTag(ref), Tokens: j - i,
	}
	span := slices.Clone(w.context[i:j])
	w.archive[ref] = span
	w.context = slices.Concat(w.context[:i], []hippocam.Message{mem}, w.context[j:])
	return hippocam.ReplaceOp(messageIDs(span), mem)
}

func (m *model) commit(rt *rapid.T) {
	w := m.begin()
	ops := make([]hippocam.Op, rapid.IntRange(1, 4).Draw(rt, "ops"))
	for i := range ops {
		ops[i] = m.drawOp(rt, w)
	}
	if err := m.st.Commit(rt.Context(), m.s, hippocam.Change{From: m.s.Version, Ops: ops}); err != nil {
		rt.Fatalf("commit %v: %v", describeOps(ops), err)
	}
	m.context, m.entered = w.context, w.entered
	for ref, kids := range w.archive {
		m.archive[ref] = kids
		m.fresh = append(m.fresh, ref)
	}
}

// invalid commits valid ops followed by one invalid replace; the store must refuse all of them.
func (m *model) invalid(rt *rapid.T) {
	w := m.begin()
	var ops []hippocam.Op
	for range rapid.IntRange(0, 2).Draw(rt, "valid ops") {
		ops = append(ops, m.drawOp(rt, w))
	}
	bad := hippocam.ReplaceOp(nil, hippocam.Message{ID: m.nextID("m"), Role: hippocam.RoleUser, Kind: hippocam.KindIntentMemory, Ref: m.nextID("r")})
	ids := messageIDs(w.context)
	switch rapid.IntRange(0, 4).Draw(rt, "flaw") {
	case 0: // a message that is not in the context (archived, or never seen)
		bad.Span = []string{"nowhere"}
		if refs := slices.Sorted(maps.Keys(m.archive)); len(refs) > 0 {
			bad.Span = []string{m.archive[refs[0]][0].ID}
		}
	case 1: // out of order: the right ends, the middle swapped
		if len(ids) < 4 {
			rt.Skip("too short")
		}
		bad.Span = []string{ids[0], ids[2], ids[1], ids[3]}
	case 2: // a gap
		if len(ids) < 3 {
			rt.Skip("too short")
		}
		bad.Span = []string{ids[0], ids[2]}
	case 3: // a ref already in use
		if len(m.archive) == 0 {
			rt.Skip("no ref yet")
		}
		bad.Memory.Ref = slices.Sorted(maps.Keys(m.archive))[0]
		bad.Span = ids[len(ids)-1:]
	case 4: // an empty span
	}
	ops = append(ops, bad)
	version := m.s.Version
	err := m.st.Commit(rt.Context(), m.s, hippocam.Change{From: version, Ops: ops})
	if hippocam.ErrorCode(err) != hippocam.EINVALID {
		rt.Fatalf("commit %v: err = %v, want %s", describeOps(ops), err, hippocam.EINVALID)
	}
	if m.s.Version != version {
		rt.Fatalf("a refused commit moved the version to %d", m.s.Version)
	}
}

// check compares the store's context, its expansion and its new archive nodes with the model.
// Archive nodes never change once made, so each is compared once here and all of them again at
// the end.
func (m *model) check(rt *rapid.T) {
	ctx := rt.Context()
	got, err := m.st.Session(ctx, m.s.Tenant, m.s.ID)
	if err != nil {
		rt.Fatal(err)
	}
	if got.Version != m.s.Version {
		rt.Fatalf("stored version %d, want %d", got.Version, m.s.Version)
	}
	if d := diffMessages(m.context, got.Context); d != "" {
		rt.Fatalf("context: %s", d)
	}
	m.checkChildren(rt, m.fresh)
	m.fresh = nil
	list, err := m.st.Sessions(ctx, m.s.Tenant)
	if err != nil {
		rt.Fatal(err)
	}
	for _, in := range list {
		if in.ID == m.s.ID && in.Messages != len(m.context) {
			rt.Fatalf("Sessions says %d messages, the context holds %d", in.Messages, len(m.context))
		}
	}
	all, err := hippocam.Expand(ctx, hippocam.SessionArchive(m.st, m.s.Tenant, m.s.ID), got.Context)
	if err != nil {
		rt.Fatal(err)
	}
	if len(all) != len(m.entered) || (len(all) > 0 && !reflect.DeepEqual(all, m.entered)) {
		rt.Fatalf("Expand = %v, want %v", messageIDs(all), messageIDs(m.entered))
	}
}

// checkChildren compares the store's children of refs with the model's.
func (m *model) checkChildren(rt *rapid.T, refs []string) {
	for _, ref := range refs {
		kids, err := m.st.Children(rt.Context(), m.s.Tenant, m.s.ID, ref)
		if err != nil {
			rt.Fatalf("children %s: %v", ref, err)
		}
		if d := diffMessages(m.archive[ref], kids); d != "" {
			rt.Fatalf("children of %s: %s", ref, d)
		}
	}
}

func describeOps(ops []hippocam.Op) []string {
	out := make([]string, len(ops))
	for i, op := range ops {
		switch {
		case op.Append != nil:
			out[i] = "append " + op.Append.ID
		case op.Memory != nil:
			out[i] = fmt.Sprintf("replace %v by %s/%s", op.Span, op.Memory.ID, op.Memory.Ref)
		default:
			out[i] = fmt.Sprintf("%+v", op)
		}
	}
	return out
}
