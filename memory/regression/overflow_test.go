package regression

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/hippocam/hippocam/memory/numeric"
)

// ingestWithin ingests outcomes into fresh data under b and fails the test if that takes
// longer than limit (the fit used to spin for ever on values it could not square).
func ingestWithin(t *testing.T, b Bindings, outcomes []Outcome, limit time.Duration) *Data {
	t.Helper()
	d := &Data{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Runtime{}.Ingest(d, &b, &Batch{Outcomes: outcomes}, numeric.Event{Source: "t", Index: 0})
	}()
	select {
	case <-done:
		return d
	case <-time.After(limit):
		t.Fatalf("ingesting %v did not return within %v", outcomes, limit)
		return nil
	}
}

func timedOutcome(store, week, v string) Outcome {
	return Outcome{Target: "sales", Dims: map[string]string{"store": store, "week": week}, Value: numeric.Number(v)}
}

// TestUnfittableRecordsGiveNoFit: records that CheckBatch now refuses, ingested directly (as
// data stored before the check would hold them), make the fit give up promptly: no fit, and
// no forecast.
func TestUnfittableRecordsGiveNoFit(t *testing.T) {
	b := Bindings{Target: "sales", Key: "store", Time: "week", Family: Real}
	asks := &Batch{Requested: []numeric.Key{{Target: "sales", Dims: map[string]string{"store": "a", "week": "4"}}}}
	for _, tt := range []struct {
		name     string
		outcomes []Outcome
	}{
		{"HugeValue", []Outcome{timedOutcome("a", "1", "1e300"), timedOutcome("a", "2", "5"), timedOutcome("b", "3", "6")}},
		{"HugeTime", []Outcome{timedOutcome("a", "1e200", "4"), timedOutcome("a", "2", "5"), timedOutcome("b", "3", "6")}},
		{"HugeValueOneSeries", []Outcome{timedOutcome("a", "1", "1e300"), timedOutcome("a", "2", "5")}},
		{"HugeOpposites", []Outcome{timedOutcome("a", "1", "1e308"), timedOutcome("b", "2", "-1e308"), timedOutcome("b", "3", "6")}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := ingestWithin(t, b, tt.outcomes, 10*time.Second)
			if d.Fit != nil {
				t.Errorf("fit %s, want none", mustJSON(t, d.Fit))
			}
			if len(d.Records) != len(tt.outcomes) {
				t.Errorf("%d records kept, want all %d", len(d.Records), len(tt.outcomes))
			}
			if adv := (Runtime{}).Advise(d, &b, asks, numeric.Event{Source: "now", Index: 1}); len(adv.Lines) != 0 || adv.Head != "" {
				t.Errorf("advice %q without a fit, want none", adv.Lines)
			}
		})
	}
}

// TestAtTheBoundStaysFinite: values and times at the magnitude CheckBatch still accepts give a
// finite fit and finite forecasts.
func TestAtTheBoundStaysFinite(t *testing.T) {
	b := Bindings{Target: "sales", Key: "store", Time: "week", Family: Real}
	var outs []Outcome
	for i, w := range []string{"-1e100", "1", "2", "3", "1e100"} {
		for _, s := range []string{"a", "b"} {
			v := fmt.Sprint(10 + i)
			if i == 4 && s == "b" {
				v = "-1e100"
			}
			outs = append(outs, timedOutcome(s, w, v))
		}
	}
	outs = append(outs, timedOutcome("a", "4", "1e100"))
	d := ingestWithin(t, b, outs, 10*time.Second)
	if d.Fit == nil {
		t.Fatal("no fit of values and times at the bound")
	}
	if !d.Fit.finite() {
		t.Fatalf("fit %s is not finite", mustJSON(t, d.Fit))
	}
	for _, dims := range []map[string]string{{"store": "a", "week": "5"}, {"store": "c"}, {"store": "b", "week": "-1e100"}} {
		fc := d.Fit.Predict(&b, dims)
		if math.IsNaN(fc.Value) || math.IsInf(fc.Value, 0) || math.IsNaN(fc.SD) || math.IsInf(fc.SD, 0) {
			t.Errorf("forecast of %v: %v ± %v", dims, fc.Value, fc.SD)
		}
	}
}

// TestTinyPositiveValues: positive values near the smallest float64 are fine on the log scale;
// the noise floor, the value's resolution over its size, stays finite, and so does the fit.
func TestTinyPositiveValues(t *testing.T) {
	b := Bindings{Target: "sales", Key: "store", Family: Positive}
	outs := []Outcome{
		{Target: "sales", Dims: map[string]string{"store": "a"}, Value: "1e-320"},
		{Target: "sales", Dims: map[string]string{"store": "b"}, Value: "3e-320"},
		{Target: "sales", Dims: map[string]string{"store": "c"}, Value: "2e-320"},
	}
	d := ingestWithin(t, b, outs, 10*time.Second)
	if d.Fit == nil || !d.Fit.finite() {
		t.Fatalf("fit %s, want a finite one", mustJSON(t, d.Fit))
	}
	fc := d.Fit.Predict(&b, map[string]string{"store": "a"})
	if fc.Value <= 0 || fc.Value > 1e-300 || math.IsNaN(fc.SD) {
		t.Errorf("forecast %v ± %v, want a tiny positive value", fc.Value, fc.SD)
	}
}

// TestSolveGivesUp: a matrix that no jitter makes positive definite ends the attempts.
func TestSolveGivesUp(t *testing.T) {
	b := Bindings{Target: "sales", Key: "store", Time: "week", Family: Real}
	obs := observations(&b, []Record{
		{Dims: map[string]string{"store": "a", "week": "1"}, Value: "1"},
		{Dims: map[string]string{"store": "a", "week": "2"}, Value: "2"},
		{Dims: map[string]string{"store": "b", "week": "3"}, Value: "4"},
	})
	d := layout(&b, obs)
	m := newMixed(d, d.rows(obs))
	done := make(chan bool)
	go func() {
		_, ok := m.solve(variances{sigma2: math.NaN(), tauA2: 1})
		done <- ok
	}()
	select {
	case ok := <-done:
		if ok {
			t.Error("solve succeeded with a NaN noise variance")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("solve did not return")
	}
	if _, ok := m.solve(variances{sigma2: 1, tauA2: 1}); !ok {
		t.Error("solve failed at ordinary variances")
	}
}
