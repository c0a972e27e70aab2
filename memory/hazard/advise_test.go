package hazard

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hippocam/hippocam/memory/numeric"
)

// curveLineRE is the advisory line the simulated agent reads.
var curveLineRE = regexp.MustCompile(`^curve (\S+) = \[((?:\d\.\d{3}, )*\d\.\d{3})\] \(support (\d+)\)$`)

// simulated is a cluster's data after a few tasks of the test world.
func simulated(t testing.TB, cohorts int) (*Data, *Bindings) {
	w := testWorld()
	rng := rand.New(rand.NewPCG(7, 8))
	b := bindings(6)
	d := &Data{}
	for c := range cohorts {
		for _, p := range plans {
			for _, r := range regions {
				n, e := w.cohort(rng, p, r, 50)
				ingest(d, b, countBatch(p, r, n, e), "task-"+strconv.Itoa(c), len(d.Records))
			}
		}
	}
	return d, b
}

func request(plan, region string) Request {
	return Request{Target: "churn", Dims: dims(plan, region), Intervals: "6"}
}

func TestAdvise(t *testing.T) {
	d, b := simulated(t, 5)
	current := &Batch{Requested: []Request{request("pro", "south"), request("basic", "north"), request("pro", "south"), request("gold", "east")}}
	a := Runtime{}.Advise(d, b, current, numeric.Event{Source: "now", Index: 9})
	if a.Head == "" {
		t.Error("no heading")
	}
	want := []struct {
		key     string
		support string
	}{
		{"churn[plan=pro,region=south]", "250"},
		{"churn[plan=basic,region=north]", "250"},
		{"churn[plan=gold,region=east]", "0"},
	}
	if len(a.Lines) != len(want) {
		t.Fatalf("lines %q; want %d (the repeated request once)", a.Lines, len(want))
	}
	for i, line := range a.Lines {
		m := curveLineRE.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("line %q is not `curve KEY = [s1, …] (support K)`", line)
		}
		if m[1] != want[i].key || m[3] != want[i].support {
			t.Errorf("line %d: key %s support %s, want %s support %s", i+1, m[1], m[3], want[i].key, want[i].support)
		}
		vals := strings.Split(m[2], ", ")
		if len(vals) != 6 {
			t.Errorf("line %q has %d values, want 6", line, len(vals))
		}
		prev := 1.0
		for _, v := range vals {
			f, _ := strconv.ParseFloat(v, 64)
			if f > prev {
				t.Errorf("line %q rises", line)
			}
			prev = f
		}
	}
	// The values are the fit's, rounded.
	s := d.Fit.Curve(dims("basic", "north"), nil, 6)
	if !strings.Contains(a.Lines[1], "["+strconv.FormatFloat(s[0], 'f', 3, 64)+", ") {
		t.Errorf("line %q does not start with the fitted s1 %.3f", a.Lines[1], s[0])
	}
}

func TestAdviseNoState(t *testing.T) {
	a := Runtime{}.Advise(&Data{}, bindings(6), &Batch{Requested: []Request{request("pro", "south")}}, numeric.Event{})
	if len(a.Lines) != 0 {
		t.Errorf("lines without any state: %q", a.Lines)
	}
	d := &Data{}
	ingest(d, bindings(6), countBatch("pro", "south", []int{0}, []int{0}), "z", 0)
	if a := (Runtime{}).Advise(d, bindings(6), &Batch{Requested: []Request{request("pro", "south")}}, numeric.Event{}); len(a.Lines) != 0 {
		t.Errorf("lines from nothing at risk: %q", a.Lines)
	}
}

// TestAdviseAllEvents: a curve that falls to 0 still renders in shape.
func TestAdviseAllEvents(t *testing.T) {
	d := &Data{}
	b := bindings(3)
	ingest(d, b, countBatch("basic", "north", []int{40, 0}, []int{40, 0}), "a", 0)
	a := Runtime{}.Advise(d, b, &Batch{Requested: []Request{{Target: "churn", Dims: dims("basic", "north"), Intervals: "3"}}}, numeric.Event{})
	if len(a.Lines) != 1 || !curveLineRE.MatchString(a.Lines[0]) || !strings.HasSuffix(a.Lines[0], "0.000] (support 40)") {
		t.Errorf("lines %q", a.Lines)
	}
}

func TestForget(t *testing.T) {
	d, b := simulated(t, 4)
	before, _ := json.Marshal(d)
	x := countBatch("plus", "north", []int{50, 40}, []int{10, 5})
	x.Curves = []Curve{{Target: "churn", Dims: dims("plus", "north"), Values: []numeric.Number{"0.5", "0.4"}}}
	ingest(d, b, x, "extra", 99)
	mid, _ := json.Marshal(d)
	if string(mid) == string(before) {
		t.Fatal("ingesting changed nothing")
	}
	Runtime{}.Forget(d, []string{"extra"})
	after, _ := json.Marshal(d)
	if string(after) != string(before) {
		t.Errorf("after Forget the data differs from before the ingest:\nbefore %s\nafter  %s", before, after)
	}
	Runtime{}.Forget(d, []string{"task-0", "task-1", "task-2", "task-3"})
	if len(d.Records) != 0 || d.Fit != nil {
		t.Errorf("forgetting every source leaves %d records, fit %v", len(d.Records), d.Fit)
	}
}

func TestRoundTrip(t *testing.T) {
	d, b := simulated(t, 3)
	enc, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var back Data
	if err := json.Unmarshal(enc, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d, &back) {
		t.Error("the data changed through JSON")
	}
	current := &Batch{Requested: []Request{request("pro", "south"), request("plus", "")}}
	a1 := Runtime{}.Advise(d, b, current, numeric.Event{})
	a2 := Runtime{}.Advise(&back, b, current, numeric.Event{})
	if !reflect.DeepEqual(a1, a2) {
		t.Errorf("advice differs after a round trip:\n%q\n%q", a1.Lines, a2.Lines)
	}
}

// TestDeterministic: the same records in the same order give the same bytes.
func TestDeterministic(t *testing.T) {
	d1, _ := simulated(t, 3)
	d2, _ := simulated(t, 3)
	j1, _ := json.Marshal(d1)
	j2, _ := json.Marshal(d2)
	if string(j1) != string(j2) {
		t.Error("two identical streams give different data")
	}
}

// TestGradient checks the analytic gradient against central differences, and that the fit is a
// stationary point of the posterior.
func TestGradient(t *testing.T) {
	d, _ := simulated(t, 2)
	b := &Bindings{Target: "churn", Entity: []string{"plan", "region"}, Contexts: []string{"site"}, Intervals: 6}
	x := countBatch("basic", "south", []int{30, 20}, []int{10, 0})
	for i := range x.Counts {
		x.Counts[i].Dims["site"] = "east"
	}
	ingest(d, b, x, "ctx", 1000)
	p := layout(d.Records, 6)
	rng := rand.New(rand.NewPCG(9, 10))
	pt := make([]float64, p.size())
	for i := range pt {
		pt[i] = rng.NormFloat64()
	}
	grad := make([]float64, len(pt))
	p.gradient(grad, pt)
	for i := range pt {
		const h = 1e-5
		up, down := append([]float64(nil), pt...), append([]float64(nil), pt...)
		up[i] += h
		down[i] -= h
		num := (p.objective(up) - p.objective(down)) / (2 * h)
		if math.Abs(num-grad[i]) > 1e-4*max(1, math.Abs(num)) {
			t.Errorf("gradient %d: analytic %v, numeric %v", i, grad[i], num)
		}
	}
	// At the fit the gradient vanishes (relative to the data's size).
	at := fitted(p, d.Fit)
	p.gradient(grad, at)
	for i, g := range grad {
		if math.Abs(g*p.scale) > 1e-4 {
			t.Errorf("gradient %d at the fit is %v", i, g)
		}
	}
}

// fitted is the parameter vector of f in p's layout.
func fitted(p *problem, f *Fit) []float64 {
	x := make([]float64, 0, p.size())
	x = append(x, f.Baseline...)
	for _, n := range p.features {
		x = append(x, f.Features[n])
	}
	for _, n := range p.entities {
		x = append(x, f.Entities[n])
	}
	for _, n := range p.contexts {
		x = append(x, f.Contexts[n])
	}
	return x
}
