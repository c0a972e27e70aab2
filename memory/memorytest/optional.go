package memorytest

import (
	"encoding/json"
	"regexp"
	"testing"

	"github.com/hippocam/hippocam"
)

// The optional interfaces of the root package, each checked when the system declares it.

// testView renders an empty state and a learned one: both encode to JSON, the empty one holds
// no entry, the learned one as many as Entries counts, and a state that is not JSON is refused.
func testView(t *testing.T, s *Suite) {
	env := s.Env(t)
	sys := s.New(env)
	v, ok := sys.(hippocam.StateViewer)
	if !ok {
		t.Skipf("%s renders no view of its state", sys.Name())
	}
	view, n, err := v.View(nil)
	if err != nil {
		t.Fatalf("View(empty state): %v", err)
	}
	if n != 0 {
		t.Errorf("View(empty state) counts %d entries", n)
	}
	mustEncode(t, "the empty state's view", view)
	state := grow(t, sys, s, 3)
	view, n, err = v.View(state)
	if err != nil {
		t.Fatalf("View(learned state): %v", err)
	}
	if want := sys.Entries(state); n != want || n < 1 {
		t.Errorf("View(learned state) counts %d entries, Entries %d", n, want)
	}
	mustEncode(t, "the learned state's view", view)
	if _, _, err := v.View(json.RawMessage(`{"cut`)); err == nil {
		t.Error("View rendered a state that is not JSON")
	}
}

// testBudget sets a small budget before the system learns and reads within it: the advisory is
// not empty and fits.
func testBudget(t *testing.T, s *Suite) {
	env := s.Env(t)
	sys := s.New(env)
	b, ok := sys.(hippocam.BudgetSetter)
	if !ok {
		t.Skipf("%s takes its budget with each Read only", sys.Name())
	}
	const budget = 600
	b.SetBudget(budget)
	state := prepare(t, sys, grow(t, sys, s, 6), s.Task(6))
	if a := mustRead(t, env, sys, state, s.Task(6), budget); a.Text == "" {
		t.Errorf("with a budget of %d set, the learned state reads as an empty advisory", budget)
	}
}

// eventKind is a kind of change that can name a metric (hippocam_<system>_<kind>_total).
var eventKind = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// testObserver checks the kinds an observer declares, that it reports nothing for an update that
// changed nothing, and that the updates of a sequence report changes of a declared kind.
func testObserver(t *testing.T, s *Suite) {
	env := s.Env(t)
	sys := s.New(env)
	o, ok := sys.(hippocam.UpdateObserver)
	if !ok {
		t.Skipf("%s reports nothing about its updates", sys.Name())
	}
	declared := map[string]bool{}
	for _, ev := range o.UpdateEvents() {
		if !eventKind.MatchString(ev.Kind) || ev.Help == "" || declared[ev.Kind] {
			t.Errorf("event kind %q (help %q): kinds are distinct lower-case words with a help text", ev.Kind, ev.Help)
		}
		declared[ev.Kind] = true
	}
	if len(declared) == 0 {
		t.Fatal("the observer declares no kind of change")
	}
	var state json.RawMessage
	counted := 0
	for i := range 6 {
		next, err := sys.Update(t.Context(), state, []hippocam.Trajectory{s.Trajectory(i)})
		if err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
		ev, err := o.Observe(state, next)
		if err != nil {
			t.Fatalf("Observe(update %d): %v", i, err)
		}
		for kind, n := range ev {
			if n < 0 {
				t.Errorf("update %d: %d changes of kind %q", i, n, kind)
			}
			if declared[kind] {
				counted += n
			}
		}
		if same, err := o.Observe(next, next); err != nil || total(same) != 0 {
			t.Errorf("Observe(a state, itself) = %v, %v; want no change", same, err)
		}
		state = next
	}
	if counted == 0 {
		t.Error("six updates reported no change of a declared kind")
	}
}

func total(ev map[string]int) int {
	n := 0
	for _, c := range ev {
		n += c
	}
	return n
}

// mustEncode checks that a view encodes to JSON, and not to null.
func mustEncode(t *testing.T, what string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%s does not encode: %v", what, err)
	}
	if string(b) == "null" {
		t.Errorf("%s encodes to null", what)
	}
}
