package bench

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/bench/learnstream"
)

// TestLearnQuick runs `bench learn --quick` as CI does: every condition produces numbers, and
// every reward lies in [0, 1].
func TestLearnQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every learning condition on a small stream")
	}
	var calls int
	last := 0
	cfg := LearnConfig{Quick: true, Progress: func(done, total int) {
		calls++
		if done < 0 || done > total {
			t.Errorf("progress %d of %d", done, total)
		}
		last = done
	}}
	rep, err := RunLearn(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if calls == 0 || last != rep.Config.Streams*rep.Config.Tasks*len(LearnConditions) {
		t.Errorf("progress: %d calls, last at %d", calls, last)
	}
	if len(rep.Summary) != len(LearnConditions) {
		t.Fatalf("%d conditions summarised, want %d", len(rep.Summary), len(LearnConditions))
	}
	unit := func(what string, x float64) {
		t.Helper()
		if math.IsNaN(x) || x < 0 || x > 1 {
			t.Errorf("%s = %v, outside [0, 1]", what, x)
		}
	}
	for _, s := range rep.Summary {
		unit(s.Condition+" reward", s.Reward)
		unit(s.Condition+" best", s.Best)
		if s.Best < s.Reward-1e-9 {
			t.Errorf("%s: best %v below attempt 1's %v", s.Condition, s.Best, s.Reward)
		}
		if s.CostUSD <= 0 || s.Calls[hippocam.CallAgent] == 0 {
			t.Errorf("%s: cost %v, agent calls %v", s.Condition, s.CostUSD, s.Calls[hippocam.CallAgent])
		}
		if len(s.Families) != len(LearnFamilies()) {
			t.Errorf("%s: %d families scored, want %d", s.Condition, len(s.Families), len(LearnFamilies()))
		}
		for f, fs := range s.Families {
			unit(s.Condition+" "+f, fs.Reward)
			unit(s.Condition+" "+f+" best", fs.Best)
		}
		for _, v := range s.Curve {
			unit(s.Condition+" curve", v)
		}
		if len(s.EntriesCurve) != rep.Config.Tasks {
			t.Errorf("%s: entries after %d tasks, want %d", s.Condition, len(s.EntriesCurve), rep.Config.Tasks)
		}
	}
	by := map[string]LearnSummary{}
	for _, s := range rep.Summary {
		by[s.Condition] = s
	}
	if by["stateless"].Entries != 0 || by["global-icl"].Entries == 0 {
		t.Errorf("memory entries: stateless %v, global-icl %v", by["stateless"].Entries, by["global-icl"].Entries)
	}
	if by["routed-icl"].Routing == nil || by["stateless"].Routing != nil {
		t.Errorf("routing figures: routed-icl %v, stateless %v", by["routed-icl"].Routing, by["stateless"].Routing)
	}
	if fs := by["stateless"].Families[FamilyCodename]; fs.Reward != 1 {
		t.Errorf("stateless on the lucky family: %v, want 1 (every value is right)", fs.Reward)
	}
	md := rep.Markdown()
	for _, c := range LearnConditions {
		if !strings.Contains(md, "| "+c+" |") {
			t.Errorf("the report has no row for %s", c)
		}
	}
	dir := t.TempDir()
	paths, err := rep.WriteDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"learn.json", "learn.md", "learn-pareto.svg", "learn-curve.svg", "learn-entries.svg", "stream-1.jsonl"} {
		if !containsPath(paths, filepath.Join(dir, name)) {
			t.Errorf("%s not written (%v)", name, paths)
		}
	}
	for _, name := range []string{"learn-pareto.svg", "learn-curve.svg", "learn-entries.svg"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		wellFormed(t, name, data)
	}
	f, err := os.Open(filepath.Join(dir, "stream-1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if tasks, err := learnstream.Read(f); err != nil || len(tasks) != rep.Config.Tasks {
		t.Errorf("the written stream reads back as %d tasks, %v", len(tasks), err)
	}
}

func containsPath(paths []string, p string) bool {
	for _, x := range paths {
		if x == p {
			return true
		}
	}
	return false
}

func wellFormed(t *testing.T, name string, data []byte) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(data))
	for {
		_, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("%s is not well-formed XML: %v", name, err)
		}
	}
}

// TestLearnRunDerive checks the per-family scores and the curve against a hand-made result.
func TestLearnRunDerive(t *testing.T) {
	st := LearnStream{Tasks: []StreamTask{
		{Source: "a", Env: StreamEnv{Ask: map[string]string{"k": "v"}}},
		{Source: "b"}, // not scored
		{Source: "b", Env: StreamEnv{Ask: map[string]string{"k": "v"}}},
		{Source: "a", Env: StreamEnv{Ask: map[string]string{"k": "v"}}},
		{Source: "a", Env: StreamEnv{Ask: map[string]string{"k": "v"}}},
	}}
	st.Scored = 4
	run := LearnRun{Result: &learnstream.Result{Rewards: []float64{1, 0, 0.5, 0}, BestRewards: []float64{1, 1, 0.5, 1}}}
	if err := run.derive(st, 2); err != nil {
		t.Fatal(err)
	}
	if got := run.Families["a"]; got.Tasks != 3 || math.Abs(got.Reward-0.5) > 1e-9 || math.Abs(got.Best-2.5/3) > 1e-9 {
		t.Errorf("family a: %+v", got)
	}
	if got := run.Families["b"]; got.Tasks != 1 || got.Reward != 0 || got.Best != 1 {
		t.Errorf("family b: %+v", got)
	}
	// windows of two tasks: {1, -}, {0, 0.5}, {0}
	want := []float64{1, 0.25, 0}
	if len(run.Curve) != len(want) {
		t.Fatalf("curve %v, want %v", run.Curve, want)
	}
	for i := range want {
		if math.Abs(run.Curve[i]-want[i]) > 1e-9 {
			t.Errorf("curve %v, want %v", run.Curve, want)
		}
	}
	run.Result.Rewards = run.Result.Rewards[:3]
	if err := run.derive(st, 2); err == nil {
		t.Error("a result with fewer rewards than scored tasks was accepted")
	}
}

func TestParetoFront(t *testing.T) {
	sums := []LearnSummary{
		{Condition: "cheap", CostUSD: 1, Reward: 0.3},
		{Condition: "dominated", CostUSD: 2, Reward: 0.3},
		{Condition: "good", CostUSD: 3, Reward: 0.7},
		{Condition: "worse", CostUSD: 4, Reward: 0.6},
		{Condition: "best", CostUSD: 5, Reward: 0.8},
	}
	var got []string
	for _, s := range paretoFront(sums) {
		got = append(got, s.Condition)
	}
	if strings.Join(got, ",") != "cheap,good,best" {
		t.Errorf("front %v, want cheap, good, best", got)
	}
}

func TestLearnTargets(t *testing.T) {
	sums := []LearnSummary{
		{Condition: "stateless", Reward: 0.30},
		{Condition: "best-of-n", Best: 0.70},
		{Condition: "global-icl", Reward: 0.40, CostUSD: 1},
		{Condition: "routed-icl", Reward: 0.60},
		{Condition: "routed-cl", Reward: 0.55, CostUSD: 0.5},
		{Condition: "lessons", Reward: 0.6, Best: 0.72, Entries: 10},
		{Condition: "lessons-append-only", Reward: 0.6, Entries: 30},
	}
	met := map[string]bool{}
	for _, tg := range learnTargets(sums, 4) {
		met[tg.Target] = tg.Met
	}
	want := map[string]bool{
		"routed-cl above routed-icl":                                    false,
		"routed-icl well above global-icl (by 0.1 or more)":             true,
		"global-icl barely above stateless (0 to 0.15)":                 true,
		"routed-cl costs at most 0.6× global-icl":                       true,
		"lessons keeps at most 0.6× the entries of lessons-append-only": true,
		"lessons' reward at least lessons-append-only's":                true,
		"lessons' best of 4 at least best-of-n's":                       true,
	}
	if len(met) != len(want) {
		t.Errorf("targets %v, want %v", met, want)
	}
	for k, v := range want {
		if got, ok := met[k]; !ok || got != v {
			t.Errorf("%s: met %v (present %v), want %v", k, got, ok, v)
		}
	}
	if got := learnTargets(sums[:1], 4); len(got) != 0 {
		t.Errorf("targets without their conditions: %v", got)
	}
}

func TestLearnProgressSumsRuns(t *testing.T) {
	var got [][2]int
	p := newLearnProgress(func(done, total int) { got = append(got, [2]int{done, total}) }, 2, 10)
	p.run(0)(1, 2) // half of run 0: 5 of its 10 tasks
	p.run(1)(4, 4)
	p.run(0)(2, 2)
	want := [][2]int{{5, 20}, {15, 20}, {20, 20}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("got %v, want %v", got, want)
		}
	}
	if newLearnProgress(nil, 1, 1).run(0) != nil {
		t.Error("no progress function, yet a run gets one")
	}
}

func TestLearnConfigValidate(t *testing.T) {
	for name, cfg := range map[string]LearnConfig{
		"TooFewTasks":      {Tasks: 5},
		"UnknownCondition": {Conditions: []string{"telepathy"}},
		"SmallWindow":      {Window: 10},
		"NegativeBudget":   {AdvisoryBudget: -1},
	} {
		if err := cfg.Validate(); hippocam.ErrorCode(err) != hippocam.EINVALID {
			t.Errorf("%s: %v, want EINVALID", name, err)
		}
	}
	if err := (LearnConfig{Quick: true}).Validate(); err != nil {
		t.Errorf("quick: %v", err)
	}
}
