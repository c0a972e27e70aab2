package hippocam_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/hippocam/hippocam"
)

func msgs(prefix string, n int) []hippocam.Message {
	out := make([]hippocam.Message, n)
	for i := range out {
		out[i] = hippocam.Message{ID: fmt.Sprintf("%s%d", prefix, i), Role: hippocam.RoleUser, Content: prefix}
	}
	return out
}

// The room after a kept context goes to one copy of the session: the first to claim it appends
// in place; every other copy, and any whose context is no longer that state, appends by copying,
// so that no copy ever sees another's messages.
func TestClaimContextOnce(t *testing.T) {
	s := &hippocam.Session{Context: append(make([]hippocam.Message, 0, 100), msgs("m", 10)...)}
	s.KeepContext("kept")
	if cap(s.Context) != len(s.Context) {
		t.Fatalf("kept context has room %d: a plain append would write into it", cap(s.Context)-len(s.Context))
	}
	a, b, shorter := s.Clone(), s.Clone(), s.Clone()
	shorter.Context = shorter.Context[:5:5]
	if kept, ok := shorter.ClaimContext(); ok || kept != nil {
		t.Fatal("a copy whose context is shorter claimed the room")
	}
	kept, ok := a.ClaimContext()
	if !ok || kept != "kept" {
		t.Fatalf("first claim: %v, %v", kept, ok)
	}
	if cap(a.Context) != 100 {
		t.Fatalf("the claim gave room %d, want 90", cap(a.Context)-len(a.Context))
	}
	if kept, ok := b.ClaimContext(); ok || kept != nil {
		t.Fatal("a second copy claimed the room")
	}
	a.Context = append(a.Context, msgs("a", 5)...)
	b.Context = append(b.Context, msgs("b", 5)...)
	shorter.Context = append(shorter.Context, msgs("c", 3)...)
	for _, c := range []struct {
		s    *hippocam.Session
		want []hippocam.Message
	}{{s, msgs("m", 10)}, {a, append(msgs("m", 10), msgs("a", 5)...)}, {b, append(msgs("m", 10), msgs("b", 5)...)},
		{shorter, append(msgs("m", 5), msgs("c", 3)...)}} {
		if !slices.EqualFunc(c.s.Context, c.want, func(x, y hippocam.Message) bool { return x.ID == y.ID }) {
			t.Fatalf("context %v, want %v", ids(c.s.Context), ids(c.want))
		}
	}
	// The owner keeps its state in turn: its clones claim the room after it, once.
	a.KeepContext(nil)
	c := a.Clone()
	if _, ok := c.ClaimContext(); !ok || cap(c.Context) != 100 {
		t.Fatalf("claim of the next state: %v, room %d", ok, cap(c.Context)-len(c.Context))
	}
	if _, ok := s.ClaimContext(); ok {
		t.Fatal("the first state's room was claimed twice")
	}
}

func ids(ms []hippocam.Message) []string {
	out := make([]string, len(ms))
	for i := range ms {
		out[i] = ms[i].ID
	}
	return out
}
