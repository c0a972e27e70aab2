package lessons_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/learn"
	"github.com/hippocam/hippocam/memory/lessons"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/tokenizer"
)

// salesTask is the task every test attempts: one decision under two visible conditions.
const salesTask = "Weekly sales report\ntags: weekly revenue\ndecide status_filter: shipped | all | pending"

// newEnv is a learning environment over a fresh simulated model, metered by role.
func newEnv(tb testing.TB) (*learn.Env, *learn.Meter) {
	tb.Helper()
	tok := tokenizer.MustDefault()
	meter := learn.NewMeter(sim.New(tok).InProcess(), hippocam.DefaultPrices)
	return &learn.Env{Model: meter, Tok: tok}, meter
}

// attempt is the k-th attempt at task key: the agent chose chosen, and the feedback says outcome
// ("right", "wrong", or "right, reference status_filter = shipped").
func attempt(key, task string, k int, chosen, outcome string) hippocam.Trajectory {
	id := fmt.Sprintf("%s#%d", key, k)
	spec := []hippocam.Message{
		{Role: hippocam.RoleSystem, Content: "You prepare reports. Answer each decision on a line of its own."},
		{Role: hippocam.RoleUser, Content: task},
	}
	feedback := "feedback: status_filter = " + chosen + " " + outcome
	return hippocam.Trajectory{
		ID:   id,
		Task: hippocam.Task{ID: id, Key: key, Attempt: k, Messages: spec},
		Messages: []hippocam.Message{
			{ID: "m1", Role: hippocam.RoleSystem, Kind: hippocam.KindRaw, Content: spec[0].Content},
			{ID: "m2", Role: hippocam.RoleUser, Kind: hippocam.KindAdvisory, Content: "- use status_filter = pending"},
			{ID: "m3", Role: hippocam.RoleUser, Kind: hippocam.KindRaw, Content: task},
			{ID: "m4", Role: hippocam.RoleAssistant, Kind: hippocam.KindRaw, Content: "status_filter = " + chosen},
			{ID: "m5", Role: hippocam.RoleUser, Kind: hippocam.KindRaw, Content: feedback},
		},
		Feedback: feedback,
		EndedAt:  time.Date(2025, 3, 1, 0, 0, k, 0, time.UTC),
	}
}

// attempts makes one attempt per outcome pair ("shipped right", "all wrong", …) at task key.
func attempts(key, task string, outcomes ...string) []hippocam.Trajectory {
	var out []hippocam.Trajectory
	for i, o := range outcomes {
		chosen, outcome, _ := strings.Cut(o, " ")
		out = append(out, attempt(key, task, i+1, chosen, outcome))
	}
	return out
}

func mustUpdate(tb testing.TB, sys *lessons.System, state json.RawMessage, trajs []hippocam.Trajectory) json.RawMessage {
	tb.Helper()
	before := bytes.Clone(state)
	next, err := sys.Update(tb.Context(), state, trajs)
	if err != nil {
		tb.Fatalf("update: %v", err)
	}
	if !bytes.Equal(state, before) {
		tb.Fatal("the update changed the state it was given")
	}
	return next
}

func mustState(tb testing.TB, raw json.RawMessage) *lessons.State {
	tb.Helper()
	st, err := lessons.ParseState(raw)
	if err != nil {
		tb.Fatal(err)
	}
	return st
}

// rules lists the active lessons of a state, in the order they were made.
func rules(tb testing.TB, raw json.RawMessage) []string {
	tb.Helper()
	var out []string
	for _, l := range mustState(tb, raw).Active() {
		out = append(out, l.Rule())
	}
	return out
}

func calls(m *learn.Meter, role hippocam.CallRole) int { return m.Usage()[role].Calls }

func TestInductorCases(t *testing.T) {
	tests := []struct {
		name     string
		outcomes []string
		want     []string
	}{
		{"AllOK", []string{"shipped right", "shipped right", "shipped right", "shipped right"}, nil},
		{"MostOK", []string{"shipped right", "all wrong", "shipped right", "shipped right"},
			[]string{"avoid status_filter = all when: revenue, weekly"}},
		{"HalfOK", []string{"shipped right", "all wrong", "shipped right", "pending wrong"},
			[]string{"use status_filter = shipped when: revenue, weekly", "avoid status_filter = all when: revenue, weekly", "avoid status_filter = pending when: revenue, weekly"}},
		{"FewOK", []string{"all wrong", "shipped right", "pending wrong", "all wrong"},
			[]string{"use status_filter = shipped when: revenue, weekly"}},
		{"NoneOK", []string{"all wrong", "pending wrong", "all wrong", "pending wrong"},
			[]string{"avoid status_filter = all when: revenue, weekly", "avoid status_filter = pending when: revenue, weekly"}},
		{"NoneOKWithReference", []string{"all wrong", "all wrong", "pending right, reference status_filter = shipped"},
			[]string{"avoid status_filter = all when: revenue, weekly", "avoid status_filter = pending when: revenue, weekly", "use status_filter = shipped when: revenue, weekly"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, meter := newEnv(t)
			state := mustUpdate(t, lessons.NewAppendOnly(env), nil, attempts("sales", salesTask, tt.outcomes...))
			if got := rules(t, state); !slices.Equal(got, tt.want) {
				t.Fatalf("lessons:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if n := calls(meter, hippocam.CallJudge); n != len(tt.outcomes) {
				t.Errorf("%d judge calls for %d attempts", n, len(tt.outcomes))
			}
			wantInductor := 1
			if tt.want == nil {
				wantInductor = 0 // every attempt was ok: nothing to compare
			}
			if n := calls(meter, hippocam.CallInductor); n != wantInductor {
				t.Errorf("%d inductor calls, want %d", n, wantInductor)
			}
			for _, l := range mustState(t, state).Active() {
				ok := strings.Count(strings.Join(tt.outcomes, " "), "right") - strings.Count(strings.Join(tt.outcomes, " "), "reference")
				if !strings.HasPrefix(l.Evidence, fmt.Sprintf("%d of %d ok", ok, len(tt.outcomes))) || len(l.Provenance.Attempts) != len(tt.outcomes) || !slices.Equal(l.Provenance.Tasks, []string{"sales"}) {
					t.Errorf("%s: evidence %q, provenance %+v", l.Rule(), l.Evidence, l.Provenance)
				}
			}
		})
	}
}

// seeded is a state holding the lessons of a file, each read as an active lesson.
func seeded(tb testing.TB, md string) json.RawMessage {
	tb.Helper()
	state, err := lessons.Import(nil, []byte(md))
	if err != nil {
		tb.Fatal(err)
	}
	return state
}

// TestConsolidatorRules brings the one candidate "avoid status_filter = all when: revenue,
// weekly" (one wrong attempt) into a state of one lesson, under each rule.
func TestConsolidatorRules(t *testing.T) {
	tests := []struct {
		name     string
		existing string
		active   []string
		// superseded is the first lesson's replacements when it is retired, else nil.
		superseded []string
	}{
		{"Duplicate", "avoid status_filter = all\n- decision: d\n- when: revenue, weekly",
			[]string{"avoid status_filter = all when: revenue, weekly"}, nil},
		{"ConflictEqualConditions", "use status_filter = all\n- decision: d\n- when: revenue, weekly",
			[]string{"avoid status_filter = all when: revenue, weekly"}, []string{"L2"}},
		{"ConflictCandidateMoreSpecific", "use status_filter = all\n- decision: d\n- when: revenue",
			[]string{"use status_filter = all when: revenue; not when: weekly", "avoid status_filter = all when: revenue, weekly"}, []string{"L2", "L3"}},
		{"ConflictCandidateMoreGeneral", "use status_filter = all\n- decision: d\n- when: amazon, revenue, weekly",
			[]string{"use status_filter = all when: amazon, revenue, weekly", "avoid status_filter = all when: revenue, weekly; not when: amazon"}, nil},
		{"ConflictOtherValue", "avoid status_filter = pending\n- decision: d\n- when: revenue, weekly",
			[]string{"avoid status_filter = all when: revenue, weekly"}, []string{"L2"}},
		{"Merge", "avoid status_filter = all\n- decision: d\n- when: monthly, revenue\n- not when: refunds",
			[]string{"avoid status_filter = all when: revenue; not when: refunds"}, []string{"L2"}},
		{"Add", "use currency = eur\n- decision: d\n- when: revenue",
			[]string{"use currency = eur when: revenue", "avoid status_filter = all when: revenue, weekly"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, meter := newEnv(t)
			state := seeded(t, "## L1: "+tt.existing+"\n- tasks: older\n- attempts: older#1\n")
			next := mustUpdate(t, lessons.New(env), state, attempts("sales", salesTask, "all wrong"))
			if got := rules(t, next); !slices.Equal(got, tt.active) {
				t.Fatalf("active lessons:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.active, "\n"))
			}
			if n := calls(meter, hippocam.CallLessons); n != 1 {
				t.Errorf("%d consolidator calls, want 1", n)
			}
			st := mustState(t, next)
			first := st.Lesson("L1")
			switch {
			case tt.superseded == nil && first.Status != lessons.Active:
				t.Errorf("L1 is %s, want it kept active", first.Status)
			case tt.superseded != nil && (first.Status != lessons.Superseded || !slices.Equal(first.SupersededBy, tt.superseded) || first.Reason == ""):
				t.Errorf("L1: status %s, superseded by %v for %q; want superseded by %v with a reason", first.Status, first.SupersededBy, first.Reason, tt.superseded)
			}
			if tt.superseded != nil {
				if last := first.History[len(first.History)-1]; last.Event != "superseded" || last.Update != st.Updates {
					t.Errorf("L1's history ends with %+v", last)
				}
			}
			if tt.name == "Merge" {
				merged := st.Active()[0]
				want := lessons.Provenance{Tasks: []string{"sales", "older"}, Attempts: []string{"sales#1", "older#1"}}
				if !slices.Equal(merged.Provenance.Tasks, want.Tasks) || !slices.Equal(merged.Provenance.Attempts, want.Attempts) || merged.History[0].Event != "merged" {
					t.Errorf("merged lesson: provenance %+v, history %+v; want %+v and merged", merged.Provenance, merged.History, want)
				}
			}
			if tt.name == "Duplicate" && !bytes.Equal(mustJSON(t, st.Lessons), mustJSON(t, mustState(t, state).Lessons)) {
				t.Error("a duplicate changed the lessons")
			}
		})
	}
}

func mustJSON(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// TestSupersededHistoryKept follows one decision point through changes of mind: every lesson
// ever made stays in the state, retired ones with what replaced them.
func TestSupersededHistoryKept(t *testing.T) {
	env, _ := newEnv(t)
	sys := lessons.New(env)
	var state json.RawMessage
	state = mustUpdate(t, sys, state, attempts("a", salesTask, "all wrong", "shipped right"))
	state = mustUpdate(t, sys, state, attempts("b", salesTask, "shipped wrong", "all right"))
	state = mustUpdate(t, sys, state, attempts("c", salesTask, "all wrong", "shipped right"))
	st := mustState(t, state)
	if len(st.Active()) == 0 || len(st.Lessons) <= len(st.Active()) {
		t.Fatalf("%d lessons, %d active: the changes of mind left no superseded lesson", len(st.Lessons), len(st.Active()))
	}
	for _, l := range st.Lessons {
		if len(l.History) == 0 || l.History[0].Event == "" {
			t.Errorf("%s has no history", l.ID)
		}
		if l.Status != lessons.Superseded {
			continue
		}
		if l.Reason == "" || len(l.SupersededBy) == 0 {
			t.Errorf("%s superseded without replacement or reason: %+v", l.ID, l)
		}
		for _, by := range l.SupersededBy {
			if st.Lesson(by) == nil {
				t.Errorf("%s superseded by unknown %s", l.ID, by)
			}
		}
	}
	got := rules(t, state)
	want := []string{"use status_filter = shipped when: revenue, weekly", "avoid status_filter = all when: revenue, weekly"}
	if !slices.Equal(got, want) {
		t.Errorf("in force after a → b → c:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestAppendOnlyKeepsMore repeats similar tasks: the consolidator keeps the lessons few, the
// append-only baseline keeps every candidate.
func TestAppendOnlyKeepsMore(t *testing.T) {
	run := func(sys *lessons.System) int {
		var state json.RawMessage
		for i := range 6 {
			task := salesTask
			if i%2 == 1 {
				task = strings.Replace(salesTask, "weekly revenue", "weekly revenue amazon", 1)
			}
			state = mustUpdate(t, sys, state, attempts(fmt.Sprintf("k%d", i), task, "all wrong", "shipped right", "shipped right"))
		}
		return sys.Entries(state)
	}
	env, _ := newEnv(t)
	consolidated := run(lessons.New(env))
	env, meter := newEnv(t)
	appended := run(lessons.NewAppendOnly(env))
	if consolidated < 1 || appended != 6 || consolidated >= appended {
		t.Fatalf("entries: %d with the consolidator, %d append-only; want fewer with the consolidator and 6 without", consolidated, appended)
	}
	if n := calls(meter, hippocam.CallLessons); n != 0 {
		t.Errorf("the append-only baseline made %d consolidator calls", n)
	}
}

func TestUpdateSkipsApplied(t *testing.T) {
	env, meter := newEnv(t)
	sys := lessons.New(env)
	trajs := attempts("sales", salesTask, "all wrong", "shipped right")
	state := mustUpdate(t, sys, nil, trajs)
	before := calls(meter, hippocam.CallJudge)
	again := mustUpdate(t, sys, state, trajs)
	if !bytes.Equal(again, state) || calls(meter, hippocam.CallJudge) != before {
		t.Fatalf("applying the same attempts again changed the state or called the judge")
	}
}

func TestRead(t *testing.T) {
	env, _ := newEnv(t)
	sys := lessons.New(env)
	state := seeded(t, "## L1: use status_filter = shipped\n- decision: count shipped orders only\n- when: revenue, weekly\n"+
		"## L2: avoid status_filter = all\n- decision: do not count every order\n- when: revenue\n- not when: audit\n"+
		"## L3: use queue = urgent\n- decision: send refunds to the urgent queue\n- when: refunds\n"+
		"## L4: use status_filter = pending\n- decision: d\n- status: superseded by L1 — replaced\n")
	task := &hippocam.Task{ID: "t", Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: salesTask}}}
	t.Run("OK", func(t *testing.T) {
		a, err := sys.Read(t.Context(), state, task, 2000)
		if err != nil {
			t.Fatal(err)
		}
		if a.Entries != 2 || !strings.Contains(a.Text, "- use status_filter = shipped when: revenue, weekly\n  decision: count shipped orders only") ||
			!strings.Contains(a.Text, "- avoid status_filter = all when: revenue; not when: audit") || strings.Contains(a.Text, "pending") || strings.Contains(a.Text, "queue") {
			t.Fatalf("advisory (%d entries):\n%s", a.Entries, a.Text)
		}
		if strings.Index(a.Text, "status_filter = shipped") > strings.Index(a.Text, "status_filter = all") {
			t.Error("lessons are not shown in the order they were made")
		}
	})
	t.Run("Budget", func(t *testing.T) {
		full, _ := sys.Read(t.Context(), state, task, 2000)
		for _, budget := range []int{0, 10, env.Tok.Count(full.Text) - 1, env.Tok.Count(full.Text)} {
			a, err := sys.Read(t.Context(), state, task, budget)
			if err != nil {
				t.Fatal(err)
			}
			if n := env.Tok.Count(a.Text); n > budget || (a.Text == "") != (a.Entries == 0) {
				t.Errorf("budget %d: %d tokens, %d entries", budget, n, a.Entries)
			}
			if budget == env.Tok.Count(full.Text) && a != full {
				t.Errorf("budget %d: the whole advisory does not fit its own size", budget)
			}
		}
	})
	t.Run("NothingSimilar", func(t *testing.T) {
		other := &hippocam.Task{ID: "t9", Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: "Translate a poem"}}}
		a, err := sys.Read(t.Context(), state, other, 2000)
		if err != nil {
			t.Fatal(err)
		}
		if a.Entries != 3 || strings.Contains(a.Text, "pending") || !strings.Contains(a.Text, "queue = urgent") {
			t.Fatalf("with nothing similar, want the active lessons, newest first to fit; got (%d entries):\n%s", a.Entries, a.Text)
		}
	})
	t.Run("Empty", func(t *testing.T) {
		if a, err := sys.Read(t.Context(), nil, task, 2000); err != nil || a.Text != "" || a.Entries != 0 {
			t.Fatalf("empty state: %+v, %v", a, err)
		}
	})
}

// TestAdvisoryGuidesTheAgent closes the loop: the lessons of failed and lucky attempts, read
// into a new attempt's context, make the simulated agent choose the reference.
func TestAdvisoryGuidesTheAgent(t *testing.T) {
	env, _ := newEnv(t)
	sys := lessons.New(env)
	state := mustUpdate(t, sys, nil, attempts("sales", salesTask, "all wrong", "pending wrong", "shipped right"))
	task := &hippocam.Task{ID: "t2", Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: salesTask}}}
	a, err := sys.Read(t.Context(), state, task, 2000)
	if err != nil {
		t.Fatal(err)
	}
	for seed := range 4 {
		resp, err := env.Model.Complete(t.Context(), &hippocam.Request{Role: hippocam.CallAgent, Extra: json.RawMessage(fmt.Sprintf(`{"seed":%d}`, seed)), Messages: []hippocam.Message{
			{Role: hippocam.RoleSystem, Content: "You prepare reports."},
			{Role: hippocam.RoleUser, Kind: hippocam.KindAdvisory, Content: a.Text},
			{Role: hippocam.RoleUser, Content: salesTask},
		}})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(resp.Message.Content); got != "status_filter = shipped" {
			t.Fatalf("seed %d: the agent answered %q with the advisory:\n%s", seed, got, a.Text)
		}
	}
}
