package bench

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/bench/learnstream"
)

// The numeric suite's report plumbing, on hand-made results: per-family scores and curves,
// targets, tables and plots.

func TestFamilyCurves(t *testing.T) {
	tasks := []taskOutline{
		{"a", true}, {"b", true}, {"a", false}, {"a", true}, {"b", true}, {"a", true},
	}
	rewards := []float64{1, 0.2, 0, 0.4, 0.5}
	got := familyCurves(tasks, rewards, 2)
	// a: tasks 1, 4, 6 (rewards 1, 0, 0.5) → windows {1, 0}, {0.5}; b: 0.2, 0.4 → {0.3}
	want := map[string][]float64{"a": {0.5, 0.5}, "b": {0.3}}
	if len(got) != len(want) {
		t.Fatalf("curves %v, want %v", got, want)
	}
	for f, w := range want {
		if len(got[f]) != len(w) {
			t.Fatalf("%s: %v, want %v", f, got[f], w)
		}
		for i := range w {
			if math.Abs(got[f][i]-w[i]) > 1e-9 {
				t.Errorf("%s: %v, want %v", f, got[f], w)
			}
		}
	}
}

// TestLearnRunDeriveNumeric: a numeric stream's sites count as one family.
func TestLearnRunDeriveNumeric(t *testing.T) {
	one := NumericEnv{Estimate: map[string]EstimateItem{"x": {Truth: 1, Tol: 1}}}
	st := LearnStream{Numeric: []NumericTask{
		{Source: "spectrum/ridge", Env: NumericEnv{Entities: &EntitiesItem{}}},
		{Source: "sales", Env: one},
		{Source: "spectrum/harbor", Env: NumericEnv{Entities: &EntitiesItem{}}},
		{Source: "sales"}, // not scored
	}, Scored: 3}
	run := LearnRun{Result: &learnstream.Result{Rewards: []float64{0.2, 1, 0.6}}}
	if err := run.derive(st, 2); err != nil {
		t.Fatal(err)
	}
	if got := run.Families[FamilySpectrum]; got.Tasks != 2 || math.Abs(got.Reward-0.4) > 1e-9 {
		t.Errorf("spectrum: %+v, want 2 tasks at 0.4", got)
	}
	if got := run.Families[FamilySales]; got.Tasks != 1 || got.Reward != 1 {
		t.Errorf("sales: %+v", got)
	}
	if _, ok := run.Families["spectrum/ridge"]; ok {
		t.Error("a site is reported as a family of its own")
	}
	if c := run.FamilyCurves[FamilySpectrum]; len(c) != 1 || math.Abs(c[0]-0.4) > 1e-9 {
		t.Errorf("spectrum curve %v", c)
	}
	if len(run.Curve) != 2 || math.Abs(run.Curve[0]-0.6) > 1e-9 || math.Abs(run.Curve[1]-0.6) > 1e-9 {
		t.Errorf("curve %v, want [0.6 0.6]", run.Curve)
	}
}

func TestLearnConfigSuite(t *testing.T) {
	cfg := LearnConfig{Suite: SuiteNumeric}.withDefaults()
	if !slices.Equal(cfg.Conditions, NumericConditions) {
		t.Errorf("numeric suite runs %v by default, want %v", cfg.Conditions, NumericConditions)
	}
	if cfg := (LearnConfig{}).withDefaults(); cfg.Suite != SuiteDecisions || !slices.Equal(cfg.Conditions, LearnConditions) {
		t.Errorf("default suite %q with %v", cfg.Suite, cfg.Conditions)
	}
	for name, cfg := range map[string]LearnConfig{
		"UnknownSuite":       {Suite: "poetry"},
		"TooFewNumericTasks": {Suite: SuiteNumeric, Tasks: 5},
	} {
		if err := cfg.Validate(); hippocam.ErrorCode(err) != hippocam.EINVALID {
			t.Errorf("%s: %v, want EINVALID", name, err)
		}
	}
	if err := (LearnConfig{Suite: SuiteNumeric, Tasks: 6}).Validate(); err != nil {
		t.Errorf("6 numeric tasks: %v", err)
	}
	for _, c := range NumericConditions {
		if !slices.Contains(LearnConditions, c) || !slices.Contains(learnstream.Conditions(), c) {
			t.Errorf("numeric condition %q is not a learning condition", c)
		}
	}
}

// numericSummaries is a hand-made summary: routed-cl beats routed-icl on sales and spectrum
// but not on cohort, and beats stateless everywhere.
func numericSummaries() []LearnSummary {
	fam := func(sales, cohort, spectrum float64) map[string]FamilyScore {
		return map[string]FamilyScore{FamilySales: {Tasks: 50, Reward: sales}, FamilyCohort: {Tasks: 50, Reward: cohort}, FamilySpectrum: {Tasks: 50, Reward: spectrum}}
	}
	curves := func(v float64) map[string][]float64 {
		return map[string][]float64{FamilySales: {v, v + 0.1}, FamilyCohort: {v}, FamilySpectrum: {v, v, v}}
	}
	return []LearnSummary{
		{Condition: "stateless", Streams: 1, Reward: 0.5, Best: 0.5, Families: fam(0.6, 0.5, 0.4), FamilyCurves: curves(0.5), CostUSD: 0.1},
		{Condition: "routed-icl", Streams: 1, Reward: 0.6, Best: 0.6, Families: fam(0.6, 0.8, 0.4), FamilyCurves: curves(0.6), CostUSD: 0.3},
		{Condition: "routed-cl", Streams: 1, Reward: 0.7, Best: 0.7, Families: fam(0.7, 0.7, 0.7), FamilyCurves: curves(0.7), CostUSD: 0.2},
	}
}

func TestNumericTargets(t *testing.T) {
	met := map[string]bool{}
	for _, tg := range numericTargets(numericSummaries()) {
		met[tg.Target] = tg.Met
	}
	want := map[string]bool{
		"routed-cl above routed-icl on sales":        true,
		"routed-cl above routed-icl on cohort":       false,
		"routed-cl above routed-icl on spectrum":     true,
		"routed-cl above routed-icl over the stream": true,
		"routed-cl above stateless on sales":         true,
		"routed-cl above stateless on cohort":        true,
		"routed-cl above stateless on spectrum":      true,
		"routed-cl above stateless over the stream":  true,
	}
	if len(met) != len(want) {
		t.Errorf("targets %v, want %v", met, want)
	}
	for k, v := range want {
		if got, ok := met[k]; !ok || got != v {
			t.Errorf("%s: met %v (present %v), want %v", k, got, ok, v)
		}
	}
	if got := numericTargets(numericSummaries()[:2]); len(got) != 0 {
		t.Errorf("targets without routed-cl: %v", got)
	}
}

// TestNumericReport: the numeric suite's report names its families and their curves, lists
// the numeric suite's targets (not the decisions suite's), and writes the family plots.
func TestNumericReport(t *testing.T) {
	rep := &LearnReport{Config: LearnConfig{Suite: SuiteNumeric, Conditions: []string{"stateless", "routed-icl", "routed-cl"}}.withDefaults()}
	tasks, err := GenerateNumericStream(1, 12)
	if err != nil {
		t.Fatal(err)
	}
	rep.Streams = []LearnStream{{Seed: 1, Numeric: tasks}}
	rep.Summary = numericSummaries()
	rep.Targets = numericTargets(rep.Summary)
	md := rep.Markdown()
	for _, want := range []string{
		"suite numeric", "| condition | sales | cohort | spectrum |", "| routed-cl | 0.70 | 0.70 | 0.70 |",
		"## Learning curves per family", "### sales\n\n| condition | 1–5 | 6–10 |", "| routed-icl | 0.60 | 0.70 |", "### cohort", "### spectrum",
		"| routed-cl above routed-icl on cohort | 0.700 against 0.800 (-0.100) | no |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "global-icl barely above stateless") || strings.Contains(md, "| carrier |") {
		t.Error("the numeric report carries the decision suite's targets or families")
	}
	dir := t.TempDir()
	paths, err := rep.WriteDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"learn-families.svg", "learn-curve-sales.svg", "learn-curve-cohort.svg", "learn-curve-spectrum.svg"} {
		if !containsPath(paths, filepath.Join(dir, name)) {
			t.Errorf("%s not written (%v)", name, paths)
			continue
		}
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
	if read, err := learnstream.Read(f); err != nil || len(read) != len(tasks) {
		t.Errorf("the written numeric stream reads back as %d tasks, %v", len(read), err)
	}
	bars := string(LearnFamilyPlot(rep.Summary, NumericFamilies()))
	if n := strings.Count(bars, "<rect x="); n != 3*3+3 {
		t.Errorf("%d boxes, want one bar per condition and family and a legend box per condition (12)", n)
	}
	for _, fam := range []string{"sales", "cohort", "spectrum"} {
		if !strings.Contains(bars, ">"+fam+"</text>") {
			t.Errorf("the family plot has no label for %s", fam)
		}
	}
}
