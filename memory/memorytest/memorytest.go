// Package memorytest is the conformance suite every memory system runs (docs/learning.md, "The systems"):
// its state round-trips through every ClusterStore it is given, update after update keeps it
// readable within the budget without changing the state it was given, a trajectory applied twice
// changes nothing, and 32 updates of one cluster at once all land. The optional interfaces of the
// root package are held to their word when a system declares them: a StateViewer renders an
// empty and a learned state, a BudgetSetter keeps its advisories within the budget it was set,
// an UpdateObserver reports what updates changed. A system's test calls Run, with the model and
// the stores of its choice (internal/learntest has this repository's).
package memorytest

import (
	"bytes"
	"encoding/json"
	"slices"
	"sync"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/learn"
)

// Store is one kind of store the suite runs on: a name and a function that opens a fresh, empty
// one, closed when the test ends.
type Store struct {
	Name string
	Open func(t *testing.T) hippocam.ClusterStore
}

// Suite says how to run the suite on one system.
type Suite struct {
	// New returns the system under test over env.
	New func(env *learn.Env) hippocam.MemorySystem
	// Env returns a fresh learning environment: the model the system's calls go to (one that
	// answers its prompts) and the tokenizer its budgets are counted with. Required.
	Env func(t testing.TB) *learn.Env
	// Stores are the cluster stores the state must round-trip through. Required.
	Stores []Store
	// Trajectory returns the i-th finished task of the stream the suite feeds (default:
	// Trajectory); Task the task read before it (default: its own task).
	Trajectory func(i int) hippocam.Trajectory
	// Task returns the task read after the i-th update (default: TaskOf).
	Task func(i int) *hippocam.Task
	// Budget is the advisory budget of every Read (default 2000 tokens).
	Budget int
	// Holds reports whether state keeps what the trajectory with the given id brought; when
	// set, the suite checks it after every update, and of every trajectory after the concurrent
	// ones.
	Holds func(state json.RawMessage, id string) bool
	// Consolidates is set for a system whose entries may become fewer as it learns (it merges
	// or folds what it keeps); otherwise Entries never falls from one update to the next.
	Consolidates bool
}

func (s *Suite) defaults() {
	if s.Trajectory == nil {
		s.Trajectory = Trajectory
	}
	if s.Task == nil {
		s.Task = TaskOf
	}
	if s.Budget <= 0 {
		s.Budget = 2000
	}
}

// Run runs the whole suite.
func Run(t *testing.T, s Suite) {
	if s.New == nil || s.Env == nil || len(s.Stores) == 0 {
		t.Fatal("memorytest: a Suite needs New, Env and at least one store")
	}
	s.defaults()
	t.Run("Empty", func(t *testing.T) { testEmpty(t, &s) })
	t.Run("UpdateSequence", func(t *testing.T) { testUpdateSequence(t, &s) })
	t.Run("SmallBudget", func(t *testing.T) { testSmallBudget(t, &s) })
	t.Run("View", func(t *testing.T) { testView(t, &s) })
	t.Run("Budget", func(t *testing.T) { testBudget(t, &s) })
	t.Run("Observer", func(t *testing.T) { testObserver(t, &s) })
	for _, st := range s.Stores {
		t.Run("RoundTrip/"+st.Name, func(t *testing.T) { testRoundTrip(t, &s, st) })
		t.Run("AppliedTwice/"+st.Name, func(t *testing.T) { testAppliedTwice(t, &s, st) })
		t.Run("Concurrent/"+st.Name, func(t *testing.T) { testConcurrent(t, &s, st) })
	}
}

func testEmpty(t *testing.T, s *Suite) {
	env := s.Env(t)
	sys := s.New(env)
	if sys.Name() == "" || sys.Description() == "" {
		t.Errorf("name %q, description %q: the router needs both", sys.Name(), sys.Description())
	}
	if n := sys.Entries(nil); n != 0 {
		t.Errorf("Entries(empty state) = %d", n)
	}
	a, err := sys.Read(t.Context(), nil, s.Task(0), s.Budget)
	if err != nil {
		t.Fatal(err)
	}
	if a.Text != "" || a.Entries != 0 {
		t.Errorf("Read(empty state) = %+v, want an empty advisory", a)
	}
}

// testUpdateSequence updates one state trajectory by trajectory and reads it after each.
func testUpdateSequence(t *testing.T, s *Suite) {
	const n = 12
	env := s.Env(t)
	sys := s.New(env)
	var state json.RawMessage
	entries := 0
	for i := range n {
		traj := s.Trajectory(i)
		before := bytes.Clone(state)
		next, err := sys.Update(t.Context(), state, []hippocam.Trajectory{traj})
		if err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
		if !bytes.Equal(state, before) {
			t.Fatalf("update %d changed the state it was given", i)
		}
		if !json.Valid(next) {
			t.Fatalf("update %d: the state is not JSON: %.200s", i, next)
		}
		if s.Holds != nil && !s.Holds(next, traj.ID) {
			t.Errorf("update %d: the state does not hold %s", i, traj.ID)
		}
		e := sys.Entries(next)
		if e < 1 || (e < entries && !s.Consolidates) {
			t.Errorf("update %d: %d entries (before: %d)", i, e, entries)
		}
		entries = e
		task := s.Task(i + 1)
		state = prepare(t, sys, next, task)
		held := bytes.Clone(state)
		a := mustRead(t, env, sys, state, task, s.Budget)
		if a.Text == "" || a.Entries < 1 {
			t.Errorf("read after update %d: empty advisory %+v from %d entries", i, a, e)
		}
		if again := mustRead(t, env, sys, state, task, s.Budget); again != a {
			t.Errorf("read after update %d: two reads of one state differ:\n%s\n---\n%s", i, a.Text, again.Text)
		}
		if !bytes.Equal(state, held) {
			t.Fatalf("read after update %d changed the state", i)
		}
	}
}

// testSmallBudget reads a grown state with budgets down to almost nothing: every advisory fits.
func testSmallBudget(t *testing.T, s *Suite) {
	env := s.Env(t)
	sys := s.New(env)
	state := prepare(t, sys, grow(t, sys, s, 9), s.Task(9))
	for _, budget := range []int{1, 50, 120, 400} {
		a := mustRead(t, env, sys, state, s.Task(9), budget)
		if a.Text == "" && a.Entries != 0 {
			t.Errorf("budget %d: empty text drawing on %d entries", budget, a.Entries)
		}
	}
	a, err := sys.Read(t.Context(), state, s.Task(9), 0)
	if err != nil || a.Text != "" {
		t.Errorf("budget 0: %+v, %v; want an empty advisory", a, err)
	}
}

// testRoundTrip stores a grown state as a cluster, reads it back byte for byte, reads the same
// advisory from it, and keeps updating it through the store.
func testRoundTrip(t *testing.T, s *Suite, store Store) {
	env := s.Env(t)
	sys := s.New(env)
	cs := store.Open(t)
	state := prepare(t, sys, grow(t, sys, s, 6), s.Task(6))
	c := &hippocam.Cluster{Tenant: "acme", ID: "c1", System: sys.Name(), Description: "weekly operations", State: state,
		Trajectories: 6, Applied: ids(s, 0, 6)}
	if err := cs.CreateCluster(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	got := mustCluster(t, cs, "c1")
	if !bytes.Equal(got.State, state) {
		t.Fatalf("the state came back changed from %s:\n%.300s\n---\n%.300s", store.Name, got.State, state)
	}
	want := mustRead(t, env, sys, state, s.Task(6), s.Budget)
	if a := mustRead(t, env, sys, got.State, s.Task(6), s.Budget); a != want {
		t.Errorf("the stored state reads otherwise:\n%s\n---\n%s", a.Text, want.Text)
	}
	for i := 6; i < 9; i++ {
		if err := learn.Apply(t.Context(), cs, sys, "acme", "c1", []hippocam.Trajectory{s.Trajectory(i)}); err != nil {
			t.Fatal(err)
		}
	}
	got = mustCluster(t, cs, "c1")
	if got.Trajectories != 9 || got.Version != 3 || !slices.Equal(sorted(got.Applied), ids(s, 0, 9)) {
		t.Errorf("after 3 applies: %d trajectories at version %d, applied %v", got.Trajectories, got.Version, got.Applied)
	}
	if e := sys.Entries(got.State); e < 1 {
		t.Errorf("the stored state holds %d entries", e)
	}
	if a := mustRead(t, env, sys, got.State, s.Task(9), s.Budget); a.Text == "" {
		t.Error("the stored state reads as an empty advisory")
	}
}

// testAppliedTwice applies trajectories again, alone and among new ones: only the new ones count.
func testAppliedTwice(t *testing.T, s *Suite, store Store) {
	env := s.Env(t)
	sys := s.New(env)
	cs := store.Open(t)
	mustCreateCluster(t, cs, sys, "c1")
	apply := func(trajs ...hippocam.Trajectory) {
		t.Helper()
		if err := learn.Apply(t.Context(), cs, sys, "acme", "c1", trajs); err != nil {
			t.Fatal(err)
		}
	}
	apply(s.Trajectory(0))
	apply(s.Trajectory(1))
	once := mustCluster(t, cs, "c1")
	apply(s.Trajectory(1))
	apply(s.Trajectory(0), s.Trajectory(1))
	again := mustCluster(t, cs, "c1")
	if again.Version != once.Version || !bytes.Equal(again.State, once.State) || again.Trajectories != 2 {
		t.Errorf("applying known trajectories changed the cluster: version %d → %d, %d trajectories", once.Version, again.Version, again.Trajectories)
	}
	apply(s.Trajectory(1), s.Trajectory(2), s.Trajectory(2))
	got := mustCluster(t, cs, "c1")
	if got.Trajectories != 3 || got.Version != once.Version+1 || !slices.Equal(sorted(got.Applied), ids(s, 0, 3)) {
		t.Errorf("after a mixed batch: %d trajectories at version %d, applied %v; want 3 at %d", got.Trajectories, got.Version, got.Applied, once.Version+1)
	}
	wrong := &hippocam.Cluster{Tenant: "acme", ID: "c2", System: "not-" + sys.Name()}
	if err := cs.CreateCluster(t.Context(), wrong); err != nil {
		t.Fatal(err)
	}
	err := learn.Apply(t.Context(), cs, sys, "acme", "c2", []hippocam.Trajectory{s.Trajectory(0)})
	if hippocam.ErrorCode(err) != hippocam.EINVALID {
		t.Errorf("applying to another system's cluster: err = %v, want %s", err, hippocam.EINVALID)
	}
}

// testConcurrent applies 32 trajectories to one cluster at once, each through learn.Apply (read,
// update, commit from the version read, again on ECONFLICT): all of them land.
func testConcurrent(t *testing.T, s *Suite, store Store) {
	const updaters = 32
	env := s.Env(t)
	sys := s.New(env)
	cs := store.Open(t)
	mustCreateCluster(t, cs, sys, "c1")
	errs := make([]error, updaters)
	var wg sync.WaitGroup
	for i := range updaters {
		wg.Go(func() {
			errs[i] = learn.Apply(t.Context(), cs, sys, "acme", "c1", []hippocam.Trajectory{s.Trajectory(i)})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("updater %d: %v", i, err)
		}
	}
	got := mustCluster(t, cs, "c1")
	applied := sorted(got.Applied)
	if got.Trajectories != updaters || got.Version != updaters || !slices.Equal(applied, ids(s, 0, updaters)) {
		t.Fatalf("after %d concurrent updates: %d trajectories, version %d, applied %v", updaters, got.Trajectories, got.Version, applied)
	}
	if s.Holds != nil {
		for i := range updaters {
			if id := s.Trajectory(i).ID; !s.Holds(got.State, id) {
				t.Errorf("the state lost %s", id)
			}
		}
	}
	if a := mustRead(t, env, sys, prepare(t, sys, got.State, s.Task(updaters)), s.Task(updaters), s.Budget); a.Text == "" {
		t.Error("the state reads as an empty advisory")
	}
}

// grow returns the state after updates with the first n trajectories, one at a time.
func grow(t *testing.T, sys hippocam.MemorySystem, s *Suite, n int) json.RawMessage {
	t.Helper()
	var state json.RawMessage
	for i := range n {
		var err error
		if state, err = sys.Update(t.Context(), state, []hippocam.Trajectory{s.Trajectory(i)}); err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
	}
	return state
}

// prepare configures state for task when the system configures clusters at a task's start
// (learn.Configurer), as the proxy does before it reads; it returns the state to read.
func prepare(t *testing.T, sys hippocam.MemorySystem, state json.RawMessage, task *hippocam.Task) json.RawMessage {
	t.Helper()
	cf, ok := sys.(learn.Configurer)
	if !ok {
		return state
	}
	next, _, err := cf.Configure(t.Context(), state, task)
	if err != nil {
		t.Fatal(err)
	}
	if next == nil {
		return state
	}
	return next
}

// mustRead reads an advisory and checks that it fits the budget.
func mustRead(t *testing.T, env *learn.Env, sys hippocam.MemorySystem, state json.RawMessage, task *hippocam.Task, budget int) hippocam.Advisory {
	t.Helper()
	a, err := sys.Read(t.Context(), state, task, budget)
	if err != nil {
		t.Fatal(err)
	}
	if n := env.Tok.Count(a.Text); n > budget {
		t.Errorf("the advisory has %d tokens, over its budget of %d", n, budget)
	}
	return a
}

func mustCreateCluster(t *testing.T, cs hippocam.ClusterStore, sys hippocam.MemorySystem, id string) {
	t.Helper()
	c := &hippocam.Cluster{Tenant: "acme", ID: id, System: sys.Name(), Description: "weekly operations"}
	if err := cs.CreateCluster(t.Context(), c); err != nil {
		t.Fatal(err)
	}
}

func mustCluster(t *testing.T, cs hippocam.ClusterStore, id string) *hippocam.Cluster {
	t.Helper()
	c, err := cs.Cluster(t.Context(), "acme", id)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ids returns the ids of trajectories lo to hi-1, sorted.
func ids(s *Suite, lo, hi int) []string {
	var out []string
	for i := lo; i < hi; i++ {
		out = append(out, s.Trajectory(i).ID)
	}
	slices.Sort(out)
	return out
}

func sorted(list []string) []string { return slices.Sorted(slices.Values(list)) }
