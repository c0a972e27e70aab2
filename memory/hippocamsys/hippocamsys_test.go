package hippocamsys_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/internal/learntest"
	"github.com/hippocam/hippocam/learn"
	"github.com/hippocam/hippocam/memory/hippocamsys"
	"github.com/hippocam/hippocam/memory/memorytest"
)

func TestSystem(t *testing.T) {
	memorytest.Run(t, learntest.Suite(memorytest.Suite{
		New:          func(env *learn.Env) hippocam.MemorySystem { return hippocamsys.New(env) },
		Holds:        holds,
		Consolidates: true,
	}))
}

// holds reports whether the trajectory's originals are in the cluster session: absorbed, and
// its request findable in the context or the archive.
func holds(state json.RawMessage, id string) bool {
	st, err := hippocamsys.Decode(state)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(st.Absorbed, func(a hippocamsys.Absorbed) bool { return a.ID == id })
}

// TestUpdate_ClosedIntents checks that every trajectory enters as one closed intent that PRECIP
// consolidates, and that nothing is lost: expanding the cluster session's context gives back
// every absorbed message, in order.
func TestUpdate_ClosedIntents(t *testing.T) {
	env := learntest.Env(t)
	sys := hippocamsys.New(env)
	var state json.RawMessage
	const n = 4
	for i := range n {
		var err error
		if state, err = sys.Update(t.Context(), state, []hippocam.Trajectory{memorytest.Trajectory(i)}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := hippocamsys.Decode(state)
	if err != nil {
		t.Fatal(err)
	}
	s := &st.Session
	if s.Consolidations.Intent != n || len(s.Stack) != 0 {
		t.Errorf("%d intent consolidations, stack %v; want %d and empty", s.Consolidations.Intent, s.Stack, n)
	}
	for _, m := range s.Context {
		if m.Kind == hippocam.KindRaw {
			t.Errorf("raw message left in the cluster context: %q", m.Content)
		}
	}
	if u := s.Usage[hippocam.CallPrecip]; u.Calls < n {
		t.Errorf("PRECIP calls = %d, want at least %d", u.Calls, n)
	}
	all, err := hippocam.Expand(t.Context(), archive{st}, s.Context)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range n {
		for _, m := range hippocamsys.Messages(ptr(memorytest.Trajectory(i))) {
			want = append(want, m.Content)
		}
	}
	var got []string
	for _, m := range all {
		got = append(got, m.Content)
	}
	if !slices.Equal(got, want) {
		t.Errorf("the expansion is not what was absorbed:\n%q\nwant\n%q", got, want)
	}
	// The memories keep the facts of the tasks, and the advisory shows them without handles.
	a, err := sys.Read(t.Context(), state, memorytest.TaskOf(n), 2000)
	if err != nil {
		t.Fatal(err)
	}
	for _, fact := range []string{"report_owner := Dana", "refund_limit := 200", "warehouse := Leeds"} {
		if !strings.Contains(a.Text, fact) {
			t.Errorf("the advisory lacks %q:\n%s", fact, a.Text)
		}
	}
	if strings.Contains(a.Text, "[ref:") {
		t.Errorf("the advisory shows archive handles the task cannot open:\n%s", a.Text)
	}
}

// TestUpdate_Folds runs a small window: PALIM folds the cluster's memories as they pile up, and
// the advisory stays within its budget.
func TestUpdate_Folds(t *testing.T) {
	env := learntest.Env(t)
	sys := hippocamsys.New(env)
	sys.Window = 4000
	var state json.RawMessage
	for i := range 30 {
		var err error
		if state, err = sys.Update(t.Context(), state, []hippocam.Trajectory{memorytest.Trajectory(i)}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := hippocamsys.Decode(state)
	if err != nil {
		t.Fatal(err)
	}
	if st.Session.Consolidations.Prefix == 0 {
		t.Errorf("no prefix consolidation in 30 trajectories at W = 4000; context of %d messages", len(st.Session.Context))
	}
	if len(st.Absorbed) != 30 {
		t.Errorf("%d trajectories recorded as absorbed", len(st.Absorbed))
	}
	a, err := sys.Read(t.Context(), state, memorytest.TaskOf(30), 500)
	if err != nil {
		t.Fatal(err)
	}
	if a.Text == "" || env.Tok.Count(a.Text) > 500 {
		t.Errorf("advisory of %d tokens for a budget of 500:\n%s", env.Tok.Count(a.Text), a.Text)
	}
}

func ptr[T any](v T) *T { return &v }

// archive reads the state's archive for hippocam.Expand.
type archive struct{ st *hippocamsys.State }

func (a archive) Children(_ context.Context, ref string) ([]hippocam.Message, error) {
	kids, ok := a.st.Archive[ref]
	if !ok {
		return nil, hippocam.Errorf(hippocam.ENOTFOUND, "no ref %q", ref)
	}
	return kids, nil
}

func (a archive) Message(context.Context, string) (*hippocam.Message, error) {
	return nil, hippocam.Errorf(hippocam.ENOTFOUND, "not needed")
}

func (a archive) Search(context.Context, string, int) ([]hippocam.SearchHit, error) { return nil, nil }

// TestRelearn forgets a trajectory: the state becomes exactly the one that never absorbed it.
func TestRelearn(t *testing.T) {
	env := learntest.Env(t)
	sys := hippocamsys.New(env)
	sys.Window = 4000
	grow := func(skip string) json.RawMessage {
		var state json.RawMessage
		for i := range 14 {
			traj := memorytest.Trajectory(i)
			if traj.ID == skip {
				continue
			}
			var err error
			if state, err = sys.Update(t.Context(), state, []hippocam.Trajectory{traj}); err != nil {
				t.Fatal(err)
			}
		}
		return state
	}
	state, without := grow(""), grow("t004")
	before := string(state)
	got, err := sys.Relearn(t.Context(), state, []string{"t004"})
	if err != nil {
		t.Fatal(err)
	}
	if string(state) != before {
		t.Error("Relearn changed the state it was given")
	}
	a, b := mustDecode(t, got), mustDecode(t, without)
	if holds(got, "t004") || !slices.Equal(contents(a.Session.Context), contents(b.Session.Context)) || len(a.Archive) != len(b.Archive) {
		t.Errorf("relearned context:\n%q\nwant (never absorbed):\n%q", contents(a.Session.Context), contents(b.Session.Context))
	}
	if same, err := sys.Relearn(t.Context(), got, []string{"t004"}); err != nil || string(same) != string(got) {
		t.Errorf("forgetting what is not there changed the state (%v)", err)
	}
}

func mustDecode(t *testing.T, state json.RawMessage) *hippocamsys.State {
	t.Helper()
	st, err := hippocamsys.Decode(state)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func contents(msgs []hippocam.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Content
	}
	return out
}
