package learnstream

import (
	"math"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
)

// numericTask has one item of every kind; its keys are written in another order in the env than
// in the task, as dimensions form a set.
func numericTask(t *testing.T) *Task {
	t.Helper()
	line := `{"id":"n1","source":"mixed","messages":[{"role":"user","content":"Forecasts\nestimate sales[store=n,week=12]\nestimate-curve churn[plan=a] over 3\nestimate-entities power\ndecide unit: boxes | pallets"}],` +
		`"env":{"decide":{"unit":{"right":["pallets"]}},"estimate":{"sales[week=12,store=n]":{"truth":100,"tol":10}},` +
		`"curve":{"churn[plan=a]":{"truth":[0.9,0.8,0.7],"realized":[0.92,0.81,0.69],"tol":0.1}},` +
		`"entities":{"identity":"freq","field":"power","truth":[[100,-40],[200,-50],[300,-60]],"tol_identity":1,"tol":5}}}`
	tasks, err := Read(strings.NewReader(line))
	if err != nil {
		t.Fatal(err)
	}
	if n := tasks[0].Items(); n != 4 {
		t.Fatalf("Items() = %d, want 4", n)
	}
	return &tasks[0]
}

func TestScoreNumeric(t *testing.T) {
	task := numericTask(t)
	const (
		salesOutcome = ", outcome sales[week=12,store=n] = 100"
		churnOutcome = ", outcome churn[plan=a] = [0.92, 0.81, 0.69]"
	)
	tests := []struct {
		name     string
		answers  []string
		reward   float64 // the mean of the four items
		feedback []string
	}{
		{"Everything",
			// The entity at 100.9 comes first but 100.4 is closer to the true 100: greedy
			// matching pairs the closest first, so 100.9 stays unmatched.
			[]string{"unit = pallets\nsales[store=n,week=12] = 104\n- churn[plan=a] = [0.88, 0.8, 0.75]\n" +
				"entity freq=100.9 power=-40\nentity freq=100.4 power=-41\nentity freq=199.5 power=-52.5\nentity freq=250 power=-55"},
			(1 + (1 - 4.0/10) + (1 - (0.02+0+0.05)/3/0.1) + (2*2.0/7)*((1-1.0/5)+(1-2.5/5))/2) / 4,
			[]string{"feedback: unit = pallets right", "feedback: sales[week=12,store=n] = 104" + salesOutcome,
				"feedback: churn[plan=a] = [0.88, 0.8, 0.75]" + churnOutcome, "feedback: 2 of 4 answered entities matched"}},
		{"NoAnswer", []string{"ok"}, 0,
			[]string{"feedback: unit: no answer, wrong", "feedback: sales[week=12,store=n]: no answer" + salesOutcome,
				"feedback: churn[plan=a]: no answer" + churnOutcome, "feedback: entities: no answer"}},
		{"Unknown", []string{"sales[store=n,week=12] = unknown\nchurn[plan=a] = unknown\nentities: none\nentity freq=100\nunit = crates"}, 0,
			[]string{"feedback: unit = crates wrong", "feedback: sales[week=12,store=n]: no answer" + salesOutcome,
				"feedback: churn[plan=a]: no answer" + churnOutcome, "feedback: entities: no answer"}},
		{"FarAndShort", []string{"sales[store=n,week=12] = 130\nchurn[plan=a] = [0.9, 0.8]\nentity freq=500 power=-40"}, 0,
			[]string{"feedback: unit: no answer, wrong", "feedback: sales[week=12,store=n] = 130" + salesOutcome,
				"feedback: churn[plan=a] = [0.9, 0.8]: 2 values, not 3" + churnOutcome, "feedback: 0 of 1 answered entities matched"}},
		{"LatestCounts", []string{"sales[store=n,week=12] = 50\nentity freq=100 power=-40\nchurn[plan=a] = [0.9, 0.8, 0.7]",
			"sales[week=12, store=n] = 99\nentity freq=300 power=-60\nentity freq=200 power=-50\nchurn[plan=a] = [1, 1, 1]"},
			(0 + (1 - 1.0/10) + max(0, 1-(0.1+0.2+0.3)/3/0.1) + (2*2.0/5)*1) / 4,
			[]string{"feedback: unit: no answer, wrong", "feedback: sales[week=12,store=n] = 99" + salesOutcome,
				"feedback: churn[plan=a] = [1, 1, 1]" + churnOutcome, "feedback: 2 of 2 answered entities matched"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := score(task, tt.answers)
			if !got.Scored || math.Abs(got.Reward-tt.reward) > 1e-12 || got.Feedback != strings.Join(tt.feedback, "\n") {
				t.Fatalf("score = %v\n%s\nwant %v\n%s", got.Reward, got.Feedback, tt.reward, strings.Join(tt.feedback, "\n"))
			}
		})
	}
}

// A stream of numeric tasks through the runner and the simulated agent: without memory the
// second task has nothing to copy; with routed icl it copies the first task's outcome from the
// feedback its advisory shows.
func TestNumericStream(t *testing.T) {
	stream := `{"id":"s1","source":"sales","messages":[{"role":"user","content":"Weekly sales forecast\nobs sales[store=n,week=1] = 100\nestimate sales[store=n,week=2]"}],"env":{"estimate":{"sales[store=n,week=2]":{"truth":104,"tol":10}}}}
{"id":"s2","source":"sales","messages":[{"role":"user","content":"Weekly sales forecast\nestimate sales[store=n,week=3]"}],"env":{"estimate":{"sales[store=n,week=3]":{"truth":106,"tol":10}}}}
{"id":"c1","source":"churn","messages":[{"role":"user","content":"Churn by plan\ncounts churn[plan=a] interval=1 at_risk=50 events=5\ncounts churn[plan=a] interval=2 at_risk=45 events=9\nestimate-curve churn[plan=a] over 2"}],"env":{"curve":{"churn[plan=a]":{"truth":[0.9,0.8],"realized":[0.91,0.8],"tol":0.1}}}}
{"id":"c2","source":"churn","messages":[{"role":"user","content":"Churn by plan\nestimate-curve churn[plan=a] over 2"}],"env":{"curve":{"churn[plan=a]":{"truth":[0.9,0.8],"realized":[0.89,0.79],"tol":0.1}}}}`
	tasks, err := Read(strings.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	// c1: the Kaplan–Meier curve of its counts, [0.9, 0.72]; c2 under icl: c1's realized curve.
	c1 := 1 - (0+0.08)/2/0.1
	want := map[string][]float64{
		Stateless: {1 - 4.0/10, 0, c1, 0},
		RoutedICL: {1 - 4.0/10, 1 - 2.0/10, c1, 1 - (0.01+0)/2/0.1},
	}
	for cond, rewards := range want {
		res := run(t, tasks, Config{Condition: cond})
		if len(res.Rewards) != len(rewards) {
			t.Fatalf("%s: rewards %v", cond, res.Rewards)
		}
		for i, r := range res.Rewards {
			if math.Abs(r-rewards[i]) > 1e-9 {
				t.Fatalf("%s: rewards %v, want %v", cond, res.Rewards, rewards)
			}
		}
		if cond == RoutedICL && res.Clusters != 2 {
			t.Fatalf("%s: %d clusters, want one per title", cond, res.Clusters)
		}
	}
	if calls := run(t, tasks, Config{Condition: Stateless}).Calls[hippocam.CallAgent]; calls != len(tasks) {
		t.Fatalf("%d agent calls for %d tasks", calls, len(tasks))
	}
}
