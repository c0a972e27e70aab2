package library_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/learn"
	"github.com/hippocam/hippocam/memory/library"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/tokenizer"
)

func env() *learn.Env {
	tok := tokenizer.MustDefault()
	return &learn.Env{Model: sim.New(tok).InProcess(), Tok: tok}
}

func TestNames(t *testing.T) {
	want := []string{"icl", "reasoning_bank", "lessons", "hippocam", "regression", "hazard", "entities"}
	if got := library.Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
}

func TestNewBuildsEverySystemByItsID(t *testing.T) {
	for _, name := range library.Names() {
		s, err := library.New(name, env())
		if err != nil {
			t.Fatalf("New(%q): %v", name, err)
		}
		if s.Name() != name || s.Description() == "" {
			t.Fatalf("New(%q) built %q with description %q", name, s.Name(), s.Description())
		}
	}
}

func TestLibrary(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		systems, err := library.Library(env(), []string{"hippocam", "icl"})
		if err != nil || len(systems) != 2 || systems[0].Name() != "hippocam" || systems[1].Name() != "icl" {
			t.Fatalf("Library = %v, %v", systems, err)
		}
		all, err := library.Library(env(), nil)
		if err != nil || len(all) != len(library.Names()) {
			t.Fatalf("Library(nil) = %d systems, %v", len(all), err)
		}
	})
	for name, ids := range map[string][]string{"ErrUnknown": {"icl", "vector_db"}, "ErrTwice": {"icl", "icl"}} {
		t.Run(name, func(t *testing.T) {
			if _, err := library.Library(env(), ids); hippocam.ErrorCode(err) != hippocam.EINVALID {
				t.Fatalf("Library(%v) error %v, want EINVALID", ids, err)
			}
		})
	}
}

// TestRegistry checks the registry's lines: every id once, each building the system it names.
func TestRegistry(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range library.Registry() {
		if e.Name == "" || seen[e.Name] || e.New == nil {
			t.Fatalf("registry line %+v: ids are distinct and every line builds its system", e)
		}
		seen[e.Name] = true
		if got := e.New(env()).Name(); got != e.Name {
			t.Errorf("the line of %q builds %q", e.Name, got)
		}
	}
}

// TestView renders states through the systems' views: a known system's view counts what its
// Entries counts; a system the library does not have shows its state as stored.
func TestView(t *testing.T) {
	sys, err := library.New("icl", env())
	if err != nil {
		t.Fatal(err)
	}
	state, err := sys.Update(t.Context(), nil, []hippocam.Trajectory{{ID: "t1", Task: hippocam.Task{ID: "t1",
		Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: "Weekly sales report"}}}, Feedback: "right"}})
	if err != nil {
		t.Fatal(err)
	}
	view, n, err := library.View("icl", state)
	if err != nil || n != 1 || n != sys.Entries(state) {
		t.Fatalf("View(icl) = %v, %d entries, %v; want 1", view, n, err)
	}
	if b, err := json.Marshal(view); err != nil || !strings.Contains(string(b), `"trajectories"`) {
		t.Errorf("the icl view encodes as %s, %v", b, err)
	}
	for _, name := range library.Names() {
		if _, n, err := library.View(name, nil); err != nil || n != 0 {
			t.Errorf("View(%s, empty state) = %d entries, %v", name, n, err)
		}
	}
	raw := json.RawMessage(`{"x":1}`)
	if v, n, err := library.View("vector_db", raw); err != nil || n != 0 || string(v.(json.RawMessage)) != string(raw) {
		t.Errorf("View(unknown system) = %v, %d, %v; want the state as stored", v, n, err)
	}
	if v, _, err := library.View("vector_db", nil); err != nil || fmt.Sprint(v) != "map[]" {
		t.Errorf("View(unknown system, empty state) = %v, %v; want an empty object", v, err)
	}
}

// budgeted records the budget it is given.
type budgeted struct {
	hippocam.MemorySystem
	budget int
}

func (b *budgeted) SetBudget(tokens int) { b.budget = tokens }

// TestSetBudget gives the budget to the systems that take one, and leaves the others alone.
func TestSetBudget(t *testing.T) {
	all, err := library.Library(env(), nil)
	if err != nil {
		t.Fatal(err)
	}
	b := &budgeted{MemorySystem: all[0]}
	library.SetBudget(append(all, b), 700)
	if b.budget != 700 {
		t.Errorf("a BudgetSetter got %d, want 700", b.budget)
	}
	takes := 0
	for _, s := range all {
		if _, ok := s.(hippocam.BudgetSetter); ok {
			takes++
		}
	}
	if takes == 0 {
		t.Error("no system of the library keeps its state within the budget (the hippocam system does)")
	}
}
