package library_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/learn"
	"github.com/hippocam/hippocam/memory/library"
	"github.com/hippocam/hippocam/memory/numeric"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/tokenizer"
)

// The numeric systems' bad input, end to end through the simulated model's adapter and
// extractor (docs/sim.md part 3): each is repaired once, then refused cleanly, and the cluster
// is never half-updated.

func meteredEnv() (*learn.Env, *learn.Meter) {
	tok := tokenizer.MustDefault()
	m := learn.NewMeter(sim.New(tok).InProcess(), hippocam.DefaultPrices)
	return &learn.Env{Model: m, Tok: tok}, m
}

func numTask(id, text string) hippocam.Task {
	return hippocam.Task{ID: id, Key: id, Messages: []hippocam.Message{
		{Role: hippocam.RoleSystem, Content: "You are an analyst."},
		{Role: hippocam.RoleUser, Content: text},
	}}
}

func numTrajectory(id, text, feedback string) hippocam.Trajectory {
	t := numTask(id, text)
	return hippocam.Trajectory{ID: id, Task: t, Messages: t.Messages, Feedback: feedback}
}

// configure keeps warm as the warm-up and configures the cluster for the current task.
func configure(t *testing.T, sys hippocam.MemorySystem, warm hippocam.Trajectory, current string) (json []byte, result string) {
	t.Helper()
	state, err := sys.Update(context.Background(), nil, []hippocam.Trajectory{warm})
	if err != nil {
		t.Fatal(err)
	}
	task := numTask("current", current)
	next, result, err := sys.(learn.Configurer).Configure(context.Background(), state, &task)
	if err != nil {
		t.Fatal(err)
	}
	return next, result
}

func TestNumericConfigurationRefused(t *testing.T) {
	for _, tc := range []struct {
		name, system, warm, feedback, current, problem string
	}{
		{"FieldDoesNotExist", "regression",
			"Weekly sales\n#bind depot=key\nobs sales[store=a,week=1] = 10\nestimate sales[store=a,week=2]",
			"feedback: sales[store=a,week=2] = 10, outcome sales[store=a,week=2] = 12",
			"Weekly sales\n#bind depot=key\nobs sales[store=a,week=2] = 12\nestimate sales[store=a,week=3]", "depot"},
		{"TwoRolesForOneDimension", "regression",
			"Weekly sales\n#bind store=key store=factor\nobs sales[store=a,week=1] = 10\nestimate sales[store=a,week=2]",
			"feedback: sales[store=a,week=2] = 10, outcome sales[store=a,week=2] = 12",
			"Weekly sales\n#bind store=key store=factor\nobs sales[store=a,week=2] = 12\nestimate sales[store=a,week=3]", "store"},
		{"ChoiceOutsideTheSchema", "hazard",
			"Retention\ncounts churn[plan=a] interval=1 at_risk=40 events=4\nestimate-curve churn[plan=a] over 500",
			"feedback: churn[plan=a] = [0.9], outcome churn[plan=a] = [0.88]",
			"Retention\ncounts churn[plan=a] interval=1 at_risk=30 events=2\nestimate-curve churn[plan=a] over 500", "500"},
		{"WarmupReplayFails", "regression",
			"Weekly sales\nestimate sales[store=a,week=2]",
			"feedback: the report was late",
			"Weekly sales\nestimate sales[store=a,week=3]", "warm-up"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, meter := meteredEnv()
			sys, err := library.New(tc.system, env)
			if err != nil {
				t.Fatal(err)
			}
			state, result := configure(t, sys, numTrajectory("w", tc.warm, tc.feedback), tc.current)
			if result != numeric.Failed {
				t.Fatalf("result %q, want %q", result, numeric.Failed)
			}
			if n := meter.Usage()[hippocam.CallAdapter].Calls; n != 2 {
				t.Errorf("%d adapter calls, want 2 (the answer and its one repair)", n)
			}
			v, err := numeric.ViewState(state)
			if err != nil {
				t.Fatal(err)
			}
			if v.Status != numeric.Failed || !strings.Contains(v.Problem, tc.problem) || v.Bindings != nil {
				t.Errorf("state %+v; want failed with a problem naming %s", v, tc.problem)
			}
			task := numTask("later", tc.current)
			if adv, err := sys.Read(context.Background(), state, &task, 2000); err != nil || adv.Text != "" {
				t.Errorf("a failed cluster advises %q, %v", adv.Text, err)
			}
		})
	}
}

func TestNumericBatchRefused(t *testing.T) {
	for _, tc := range []struct {
		name, system, warm, warmFeedback, current, bad, badFeedback, problem string
	}{
		{"NegativeCount", "hazard",
			"Retention\ncounts churn[plan=a] interval=1 at_risk=40 events=4\nestimate-curve churn[plan=a] over 2",
			"feedback: churn[plan=a] = [0.9, 0.8], outcome churn[plan=a] = [0.9, 0.81]",
			"Retention\ncounts churn[plan=a] interval=1 at_risk=30 events=2\nestimate-curve churn[plan=a] over 2",
			"Retention\ncounts churn[plan=a] interval=1 at_risk=30 events=-2\nestimate-curve churn[plan=a] over 2",
			"feedback: churn[plan=a] = [0.9, 0.8], outcome churn[plan=a] = [0.92, 0.83]", "events"},
		{"RisingCurve", "hazard",
			"Retention\ncounts churn[plan=a] interval=1 at_risk=40 events=4\nestimate-curve churn[plan=a] over 2",
			"feedback: churn[plan=a] = [0.9, 0.8], outcome churn[plan=a] = [0.9, 0.81]",
			"Retention\ncounts churn[plan=a] interval=1 at_risk=30 events=2\nestimate-curve churn[plan=a] over 2",
			"Retention\ncounts churn[plan=a] interval=1 at_risk=30 events=2\nestimate-curve churn[plan=a] over 2",
			"feedback: churn[plan=a] = [0.9, 0.8], outcome churn[plan=a] = [0.8, 0.85]", "cannot rise"},
		{"MissingField", "entities",
			"Scan\ndet freq=101.20 bw=0.20 power=-40.1\nestimate-entities power",
			"feedback: 1 of 1 answered entities matched",
			"Scan\ndet freq=101.22 bw=0.20 power=-40.3\nestimate-entities power",
			"Scan\ndet freq=101.21 bw=0.20\nestimate-entities power",
			"feedback: 0 of 1 answered entities matched", "power"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, meter := meteredEnv()
			sys, err := library.New(tc.system, env)
			if err != nil {
				t.Fatal(err)
			}
			state, result := configure(t, sys, numTrajectory("w", tc.warm, tc.warmFeedback), tc.current)
			if result != numeric.Configured {
				t.Fatalf("result %q, want %q", result, numeric.Configured)
			}
			before, _ := numeric.ViewState(state)
			calls := meter.Usage()[hippocam.CallExtractor].Calls
			next, err := sys.Update(context.Background(), state, []hippocam.Trajectory{numTrajectory("bad", tc.bad, tc.badFeedback)})
			if err != nil {
				t.Fatal(err)
			}
			// A trajectory whose task was extracted at its start (here, while configuring) first
			// extracts only the rest, then, when that fails twice, the whole, twice.
			want := 2
			if tc.bad == tc.current {
				want = 4
			}
			if n := meter.Usage()[hippocam.CallExtractor].Calls - calls; n != want {
				t.Errorf("%d extractor calls for the bad trajectory, want %d (each batch and its one repair)", n, want)
			}
			after, _ := numeric.ViewState(next)
			if len(after.Refused) != 1 || after.Refused[0].Source != "bad" || !strings.Contains(after.Refused[0].Error, tc.problem) {
				t.Errorf("refusals %+v; want one for bad naming %s", after.Refused, tc.problem)
			}
			if string(after.Data) != string(before.Data) || after.Events != before.Events {
				t.Errorf("a refused batch changed the data:\n%s\n---\n%s", before.Data, after.Data)
			}
		})
	}
}
