package icl_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/internal/learntest"
	"github.com/hippocam/hippocam/learn"
	"github.com/hippocam/hippocam/memory/icl"
	"github.com/hippocam/hippocam/memory/memorytest"
)

func TestSystem(t *testing.T) {
	memorytest.Run(t, learntest.Suite(memorytest.Suite{
		New:   func(env *learn.Env) hippocam.MemorySystem { return icl.New(env) },
		Holds: holds,
	}))
}

func holds(state json.RawMessage, id string) bool {
	st, err := icl.Decode(state)
	return err == nil && slices.ContainsFunc(st.Trajectories, func(e icl.Entry) bool { return e.ID == id })
}

// TestRead_NewestThatFit checks which trajectories an advisory shows: the newest that fit, in
// order, each with its request, answer and feedback; the oldest go first.
func TestRead_NewestThatFit(t *testing.T) {
	env := learntest.Env(t)
	sys := icl.New(env)
	var state json.RawMessage
	for i := range 6 {
		var err error
		if state, err = sys.Update(t.Context(), state, []hippocam.Trajectory{memorytest.Trajectory(i)}); err != nil {
			t.Fatal(err)
		}
	}
	all, err := sys.Read(t.Context(), state, memorytest.TaskOf(6), 100000)
	if err != nil {
		t.Fatal(err)
	}
	if all.Entries != 6 {
		t.Fatalf("a large budget shows %d of 6 trajectories", all.Entries)
	}
	for i := range 5 {
		a, b := strings.Index(all.Text, "t00"+string(rune('0'+i))), strings.Index(all.Text, "t00"+string(rune('1'+i)))
		if a < 0 || b < a {
			t.Errorf("trajectory %d is not before %d in:\n%s", i, i+1, all.Text)
		}
	}
	first := memorytest.Trajectory(0)
	for _, want := range []string{"Weekly sales report", "tags: revenue amazon weekly", "report_owner := Dana", "> status_filter = shipped", first.Feedback} {
		if !strings.Contains(all.Text, want) {
			t.Errorf("the advisory lacks %q:\n%s", want, all.Text)
		}
	}
	// The earlier request's decision is quoted, so that it does not read as asked again.
	if strings.Contains(all.Text, "\ndecide ") || !strings.Contains(all.Text, "> decide status_filter: shipped | all | pending") {
		t.Errorf("the earlier decision is not quoted:\n%s", all.Text)
	}
	// The advisory the earlier task was shown is not kept.
	if strings.Contains(all.Text, "what the task was shown") {
		t.Errorf("the advisory shows an earlier advisory:\n%s", all.Text)
	}
	// A budget for about two trajectories keeps the two newest.
	budget := env.Tok.Count(all.Text) * 2 / 5
	some, err := sys.Read(t.Context(), state, memorytest.TaskOf(6), budget)
	if err != nil {
		t.Fatal(err)
	}
	if some.Entries < 1 || some.Entries > 3 || !strings.Contains(some.Text, "t005") || strings.Contains(some.Text, "t000") {
		t.Errorf("budget %d shows %d trajectories:\n%s", budget, some.Entries, some.Text)
	}
	if n := env.Tok.Count(some.Text); n > budget {
		t.Errorf("%d tokens over a budget of %d", n, budget)
	}
}

func TestForget(t *testing.T) {
	sys := icl.New(learntest.Env(t))
	state, err := sys.Update(t.Context(), nil, []hippocam.Trajectory{memorytest.Trajectory(0), memorytest.Trajectory(1), memorytest.Trajectory(2)})
	if err != nil {
		t.Fatal(err)
	}
	before := string(state)
	after, err := sys.Forget(state, []string{"t001", "t404"})
	if err != nil {
		t.Fatal(err)
	}
	if string(state) != before {
		t.Error("Forget changed the state it was given")
	}
	if holds(after, "t001") || !holds(after, "t000") || !holds(after, "t002") || sys.Entries(after) != 2 {
		t.Errorf("after forgetting t001: %s", after)
	}
}

func TestDecode_ErrInvalid(t *testing.T) {
	sys := icl.New(learntest.Env(t))
	for _, state := range []string{`[1, 2]`, `{"trajectories": 3}`} {
		if _, err := sys.Update(t.Context(), json.RawMessage(state), nil); hippocam.ErrorCode(err) != hippocam.EINVALID {
			t.Errorf("update of %s: err = %v, want %s", state, err, hippocam.EINVALID)
		}
	}
}
