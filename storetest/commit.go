package storetest

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/hippocam/hippocam"
)

func testCommit(t *testing.T, open func(t *testing.T) hippocam.Store) {
	t.Run("Append", func(t *testing.T) {
		st := open(t)
		s := mustCreate(t, st, "acme", "s1")
		created := s.UpdatedAt
		tick()
		appendRaw(t, st, s, "m1", "m2", "m3")
		appendRaw(t, st, s, "m4")
		appendRaw(t, st, s, "m5", "m6")
		if !s.UpdatedAt.After(created) {
			t.Errorf("UpdatedAt = %v, not after the creation at %v", s.UpdatedAt, created)
		}
		got := mustSession(t, st, "acme", "s1")
		if ids := contextIDs(got); !slices.Equal(ids, []string{"m1", "m2", "m3", "m4", "m5", "m6"}) {
			t.Errorf("context = %v", ids)
		}
		if got.Version != 3 || s.Version != 3 {
			t.Errorf("stored version %d, caller's version %d, want 3", got.Version, s.Version)
		}
		if !got.UpdatedAt.Equal(s.UpdatedAt) || !got.CreatedAt.Equal(created) {
			t.Errorf("times = %v / %v, want %v / %v", got.CreatedAt, got.UpdatedAt, created, s.UpdatedAt)
		}
	})
	t.Run("Snapshot", func(t *testing.T) {
		st := open(t)
		s := mustCreate(t, st, "acme", "s1")
		s.Stack = hippocam.IntentStack{{Label: "ship it", Reason: "asked", Done: "merged", Start: "m1"}}
		s.StackLog = []hippocam.StackEvent{{Step: 1, Opened: []string{"ship it"}, Guidance: "I will ship it."}}
		s.Rounds = []int{120, 80}
		s.Usage = hippocam.Usage{hippocam.CallAgent: {Calls: 2, Input: 900, CachedInput: 512, Output: 77, CostUSD: 0.000317}}
		s.Consolidations = hippocam.Consolidations{Intent: 2, Prefix: 1}
		s.Transcript = hippocam.Transcript{Count: 3, Hash: "c3", PrevCount: 1, PrevHash: "c1", Answer: "m3"}
		s.Seq = 41
		mustCommit(t, st, s) // no ops: a snapshot-only change still moves the version
		got := mustSession(t, st, "acme", "s1")
		if d := diffSession(s, got); d != "" {
			t.Error(d)
		}
	})
	t.Run("ErrConflict", func(t *testing.T) {
		st := open(t)
		s := mustCreate(t, st, "acme", "s1")
		appendRaw(t, st, s, "m1")
		appendRaw(t, st, s, "m2")
		before := capture(t, st, "acme", "s1", nil, []string{"m3"})
		for _, from := range []int64{0, 1, 3} {
			stale := *s
			err := st.Commit(t.Context(), &stale, hippocam.Change{From: from, Ops: []hippocam.Op{hippocam.AppendOp(raw("m3", "late"))}})
			wantCode(t, err, hippocam.ECONFLICT)
			if stale.Version != s.Version {
				t.Errorf("a failed commit set Version = %d", stale.Version)
			}
		}
		if d := before.diff(capture(t, st, "acme", "s1", nil, []string{"m3"})); d != "" {
			t.Error(d)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		st := open(t)
		ghost := &hippocam.Session{Tenant: "acme", ID: "ghost"}
		wantCode(t, commit(t, st, ghost, hippocam.AppendOp(raw("m1", "x"))), hippocam.ENOTFOUND)
		s := mustCreate(t, st, "acme", "s1")
		appendRaw(t, st, s, "m1")
		if err := st.DeleteSession(t.Context(), "acme", "s1"); err != nil {
			t.Fatal(err)
		}
		wantCode(t, commit(t, st, s, hippocam.AppendOp(raw("m2", "x"))), hippocam.ENOTFOUND)
		_, err := st.Session(t.Context(), "acme", "s1")
		wantCode(t, err, hippocam.ENOTFOUND)
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		st := open(t)
		wantCode(t, st.Commit(t.Context(), nil, hippocam.Change{}), hippocam.EINVALID)
	})
}

func testReplace(t *testing.T, open func(t *testing.T) hippocam.Store) {
	t.Run("OK", func(t *testing.T) {
		st := open(t)
		s := mustCreate(t, st, "acme", "s1")
		appendRaw(t, st, s, "m1", "m2", "m3", "m4")
		mustCommit(t, st, s, hippocam.ReplaceOp([]string{"m2", "m3"}, memory("m5", "r1", "did two and three")))
		wantContext(t, st, s, "m1", "m5", "m4")
		wantChildren(t, st, s, "r1", "m2", "m3")
		appendRaw(t, st, s, "m6")
		wantContext(t, st, s, "m1", "m5", "m4", "m6")
	})
	t.Run("WholeContext", func(t *testing.T) {
		st := open(t)
		s := mustCreate(t, st, "acme", "s1")
		appendRaw(t, st, s, "m1", "m2", "m3")
		mustCommit(t, st, s, hippocam.ReplaceOp([]string{"m1", "m2", "m3"}, memory("m4", "r1", "did all")))
		wantContext(t, st, s, "m4")
		wantChildren(t, st, s, "r1", "m1", "m2", "m3")
	})
	t.Run("Tail", func(t *testing.T) {
		st := open(t)
		s := mustCreate(t, st, "acme", "s1")
		appendRaw(t, st, s, "m1", "m2", "m3")
		mustCommit(t, st, s, hippocam.ReplaceOp([]string{"m3"}, memory("m4", "r1", "did three")))
		appendRaw(t, st, s, "m5")
		wantContext(t, st, s, "m1", "m2", "m4", "m5")
	})
	t.Run("SeveralOps", func(t *testing.T) {
		st := open(t)
		s := mustCreate(t, st, "acme", "s1")
		appendRaw(t, st, s, "m1", "m2", "m3")
		mustCommit(t, st, s,
			hippocam.AppendOp(raw("m4", "four")),
			hippocam.ReplaceOp([]string{"m3", "m4"}, memory("m5", "r1", "did three and four")),
			hippocam.AppendOp(raw("m6", "six")),
			hippocam.ReplaceOp([]string{"m1"}, memory("m7", "r2", "did one")),
			hippocam.ReplaceOp([]string{"m5", "m6"}, memory("m8", "r3", "did r1 and six")),
		)
		wantContext(t, st, s, "m7", "m2", "m8")
		wantChildren(t, st, s, "r1", "m3", "m4")
		wantChildren(t, st, s, "r2", "m1")
		wantChildren(t, st, s, "r3", "m5", "m6")
	})
	t.Run("Nested", func(t *testing.T) {
		st := open(t)
		s := mustCreate(t, st, "acme", "s1")
		var leaves []string
		for i := 1; i <= 12; i++ {
			leaves = append(leaves, fmt.Sprintf("m%d", i))
		}
		appendRaw(t, st, s, leaves...)
		// Level 1: four intent memories of three messages each.
		mustCommit(t, st, s,
			hippocam.ReplaceOp([]string{"m1", "m2", "m3"}, memory("a1", "ra1", "first")),
			hippocam.ReplaceOp([]string{"m4", "m5", "m6"}, memory("a2", "ra2", "second")),
			hippocam.ReplaceOp([]string{"m7", "m8", "m9"}, memory("a3", "ra3", "third")),
		)
		mustCommit(t, st, s, hippocam.ReplaceOp([]string{"m10", "m11", "m12"}, memory("a4", "ra4", "fourth")))
		appendRaw(t, st, s, "m13")
		// Level 2: memories swallow memories.
		mustCommit(t, st, s, hippocam.ReplaceOp([]string{"a1", "a2"}, memory("b1", "rb1", "first half")))
		mustCommit(t, st, s, hippocam.ReplaceOp([]string{"a3", "a4"}, memory("b2", "rb2", "second half")))
		// Level 3: a prefix memory over both halves and a raw message.
		prefix := memory("c1", "rc1", "everything so far")
		prefix.Kind = hippocam.KindPrefixMemory
		prefix.Knowledge = []hippocam.KnowledgeItem{{Fact: "the build needs go 1.26", Evaluation: hippocam.EvalNeutral}}
		mustCommit(t, st, s, hippocam.ReplaceOp([]string{"b1", "b2", "m13"}, prefix))
		appendRaw(t, st, s, "m14")

		wantContext(t, st, s, "c1", "m14")
		wantChildren(t, st, s, "rc1", "b1", "b2", "m13")
		wantChildren(t, st, s, "rb1", "a1", "a2")
		wantChildren(t, st, s, "rb2", "a3", "a4")
		wantChildren(t, st, s, "ra2", "m4", "m5", "m6")

		got := mustSession(t, st, "acme", "s1")
		all, err := hippocam.Expand(t.Context(), hippocam.SessionArchive(st, "acme", "s1"), got.Context)
		if err != nil {
			t.Fatal(err)
		}
		want := append(leaves, "m13", "m14")
		if ids := messageIDs(all); !slices.Equal(ids, want) {
			t.Fatalf("Expand = %v, want %v", ids, want)
		}
		for _, m := range all {
			if m.Content != "content of "+m.ID {
				t.Errorf("expanded %s has content %q", m.ID, m.Content)
			}
		}
		if m, err := st.Message(t.Context(), "acme", "s1", "m5"); err != nil || m.Content != "content of m5" {
			t.Errorf("Message(m5) = %+v, %v", m, err)
		}
	})
}

func testInvalidOps(t *testing.T, open func(t *testing.T) hippocam.Store) {
	mem := func(id, ref string) *hippocam.Message { m := memory(id, ref, "memory"); return &m }
	msg := func(id string) *hippocam.Message { m := raw(id, "new"); return &m }
	withRef := raw("m9", "has a ref")
	withRef.Ref = "r9"
	// Each case starts from context m1 m7 m4 m5 m6, with m2 and m3 archived beneath r1.
	cases := []struct {
		name string
		ops  []hippocam.Op
	}{
		{"UnknownID", []hippocam.Op{{Span: []string{"m4", "m99"}, Memory: mem("m8", "r2")}}},
		{"ArchivedID", []hippocam.Op{{Span: []string{"m2"}, Memory: mem("m8", "r2")}}},
		{"NonContiguous", []hippocam.Op{{Span: []string{"m4", "m6"}, Memory: mem("m8", "r2")}}},
		{"OutOfOrder", []hippocam.Op{{Span: []string{"m5", "m4"}, Memory: mem("m8", "r2")}}},
		{"Shuffled", []hippocam.Op{{Span: []string{"m1", "m4", "m7", "m5"}, Memory: mem("m8", "r2")}}}, // the right ends, the middle swapped
		{"Repeated", []hippocam.Op{{Span: []string{"m4", "m4"}, Memory: mem("m8", "r2")}}},
		{"EmptySpan", []hippocam.Op{{Memory: mem("m8", "r2")}}},
		{"NoMemory", []hippocam.Op{{Span: []string{"m4"}}}},
		{"MemoryWithoutRef", []hippocam.Op{{Span: []string{"m4"}, Memory: mem("m8", "")}}},
		{"MemoryWithoutID", []hippocam.Op{{Span: []string{"m4"}, Memory: mem("", "r2")}}},
		{"MemoryIDInContext", []hippocam.Op{{Span: []string{"m4"}, Memory: mem("m1", "r2")}}},
		{"MemoryIDArchived", []hippocam.Op{{Span: []string{"m4"}, Memory: mem("m2", "r2")}}},
		{"MemoryIDInSpan", []hippocam.Op{{Span: []string{"m4"}, Memory: mem("m4", "r2")}}},
		{"RefTaken", []hippocam.Op{{Span: []string{"m4"}, Memory: mem("m8", "r1")}}},
		{"EmptyOp", []hippocam.Op{{}}},
		{"AppendAndReplace", []hippocam.Op{{Append: msg("m8"), Span: []string{"m4"}, Memory: mem("m9", "r2")}}},
		{"AppendInContext", []hippocam.Op{hippocam.AppendOp(raw("m1", "again"))}},
		{"AppendArchived", []hippocam.Op{hippocam.AppendOp(raw("m2", "again"))}},
		{"AppendWithoutID", []hippocam.Op{hippocam.AppendOp(raw("", "no id"))}},
		{"AppendWithRef", []hippocam.Op{hippocam.AppendOp(withRef)}},
		{"AppendTwice", []hippocam.Op{hippocam.AppendOp(raw("m8", "a")), hippocam.AppendOp(raw("m8", "b"))}},
		{"AfterValidOps", []hippocam.Op{
			hippocam.AppendOp(raw("m8", "valid")),
			hippocam.ReplaceOp([]string{"m5", "m6"}, memory("m9", "r2", "valid")),
			hippocam.ReplaceOp([]string{"m8", "m4"}, memory("m10", "r3", "out of order")),
		}},
		{"SpanSwallowedEarlier", []hippocam.Op{
			hippocam.ReplaceOp([]string{"m4", "m5"}, memory("m8", "r2", "valid")),
			hippocam.ReplaceOp([]string{"m5"}, memory("m9", "r3", "m5 is archived by now")),
		}},
		{"RefReusedInCommit", []hippocam.Op{
			hippocam.ReplaceOp([]string{"m4"}, memory("m8", "r2", "valid")),
			hippocam.ReplaceOp([]string{"m5"}, memory("m9", "r2", "same ref")),
		}},
		{"MemoryIDReusedInCommit", []hippocam.Op{
			hippocam.ReplaceOp([]string{"m4"}, memory("m8", "r2", "valid")),
			hippocam.ReplaceOp([]string{"m5"}, memory("m8", "r3", "same id")),
		}},
	}
	st := open(t)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := fmt.Sprintf("s%d", i)
			s := mustCreate(t, st, "acme", id)
			appendRaw(t, st, s, "m1", "m2", "m3", "m4", "m5", "m6")
			mustCommit(t, st, s, hippocam.ReplaceOp([]string{"m2", "m3"}, memory("m7", "r1", "did two and three")))
			ids := []string{"m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "m9", "m10", "m99", ""}
			refs := []string{"r1", "r2", "r3", "r9"}
			before := capture(t, st, "acme", id, refs, ids)
			version := s.Version
			wantCode(t, commit(t, st, s, c.ops...), hippocam.EINVALID)
			if s.Version != version {
				t.Errorf("a failed commit set Version = %d, want %d", s.Version, version)
			}
			if d := before.diff(capture(t, st, "acme", id, refs, ids)); d != "" {
				t.Errorf("a failed commit changed the store:\n%s", d)
			}
			appendRaw(t, st, s, "m8") // the session still takes commits
		})
	}
}

// state is what readers can see of one session, to check that a failed commit changed nothing.
type state struct {
	session  *hippocam.Session
	children map[string][]hippocam.Message // nil slice for ENOTFOUND
	messages map[string]*hippocam.Message  // nil for ENOTFOUND
}

// capture reads the session, the children of refs and the messages with the given ids.
func capture(tb testing.TB, st hippocam.Store, tenant, id string, refs, ids []string) state {
	tb.Helper()
	ctx := tb.Context()
	s := state{session: mustSession(tb, st, tenant, id), children: map[string][]hippocam.Message{}, messages: map[string]*hippocam.Message{}}
	for _, ref := range refs {
		kids, err := st.Children(ctx, tenant, id, ref)
		if err != nil && hippocam.ErrorCode(err) != hippocam.ENOTFOUND {
			tb.Fatalf("children %s: %v", ref, err)
		}
		s.children[ref] = kids
	}
	for _, mid := range ids {
		m, err := st.Message(ctx, tenant, id, mid)
		if err != nil && hippocam.ErrorCode(err) != hippocam.ENOTFOUND {
			tb.Fatalf("message %s: %v", mid, err)
		}
		s.messages[mid] = m
	}
	return s
}

func (a state) diff(b state) string {
	if d := diffSession(a.session, b.session); d != "" {
		return d
	}
	for ref, kids := range a.children {
		if (kids == nil) != (b.children[ref] == nil) {
			return fmt.Sprintf("children of %s: %v, then %v", ref, messageIDs(kids), messageIDs(b.children[ref]))
		}
		if d := diffMessages(kids, b.children[ref]); d != "" {
			return fmt.Sprintf("children of %s: %s", ref, d)
		}
	}
	for id, m := range a.messages {
		if !reflect.DeepEqual(m, b.messages[id]) {
			return fmt.Sprintf("message %q: %+v, then %+v", id, m, b.messages[id])
		}
	}
	return ""
}

func wantContext(tb testing.TB, st hippocam.Store, s *hippocam.Session, ids ...string) {
	tb.Helper()
	got := mustSession(tb, st, s.Tenant, s.ID)
	if !slices.Equal(contextIDs(got), ids) {
		tb.Fatalf("context = %v, want %v", contextIDs(got), ids)
	}
}

func wantChildren(tb testing.TB, st hippocam.Store, s *hippocam.Session, ref string, ids ...string) {
	tb.Helper()
	kids, err := st.Children(tb.Context(), s.Tenant, s.ID, ref)
	if err != nil {
		tb.Fatalf("children %s: %v", ref, err)
	}
	if !slices.Equal(messageIDs(kids), ids) {
		tb.Fatalf("children of %s = %v, want %v", ref, messageIDs(kids), ids)
	}
}
