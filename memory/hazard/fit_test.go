package hazard

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/hippocam/hippocam/memory/numeric"
)

var (
	plans   = []string{"basic", "plus", "pro"}
	regions = []string{"north", "south"}
)

// TestRecovery: 3 plans x 2 regions, 40 cohorts of 50 each; every fitted curve is within 0.04
// (mean absolute) of the truth, and far closer than one cohort's Kaplan–Meier curve.
func TestRecovery(t *testing.T) {
	w := testWorld()
	rng := rand.New(rand.NewPCG(1, 2))
	b := bindings(6)
	d := &Data{}
	var kmErr float64
	var cohorts int
	for c := range 40 {
		for _, p := range plans {
			for _, r := range regions {
				n, e := w.cohort(rng, p, r, 50)
				kmErr += meanAbs(kaplanMeier(n, e), w.truth(p, r))
				cohorts++
				ingest(d, b, countBatch(p, r, n, e), "t"+p+r, c)
			}
		}
	}
	kmErr /= float64(cohorts)
	var fitErr float64
	for _, p := range plans {
		for _, r := range regions {
			s := d.Fit.Curve(dims(p, r), nil, 6)
			assertMonotone(t, s)
			e := meanAbs(s, w.truth(p, r))
			t.Logf("%s/%s: fit %s truth %s, mean abs %.4f", p, r, format(s), format(w.truth(p, r)), e)
			if e > 0.04 {
				t.Errorf("%s/%s: mean abs error %.4f > 0.04", p, r, e)
			}
			fitErr += e / 6
		}
	}
	t.Logf("mean abs error: fit %.4f, one cohort's Kaplan–Meier %.4f", fitErr, kmErr)
	if fitErr*4 > kmErr {
		t.Errorf("the fit's error %.4f is not under a quarter of a single cohort's Kaplan–Meier error %.4f", fitErr, kmErr)
	}
}

// TestPooling: a key seen rarely borrows from keys that share its features, and a key never
// seen gets its curve from its features and the baseline. The shared N(0,1) prior splits each
// seen key's departure between its own u and its features, so an unseen key's curve is pulled
// toward the baseline: it is checked to be clearly better than the baseline and than the pooled
// population, with feature effects ordered as the truth's, not to be as good as a seen key's.
func TestPooling(t *testing.T) {
	w := testWorld()
	rng := rand.New(rand.NewPCG(3, 4))
	b := bindings(6)
	d := &Data{}
	var all [6][2]int // the pooled population's at risk and events per interval
	for c := range 20 {
		for _, k := range [][2]string{{"basic", "north"}, {"basic", "south"}, {"pro", "north"}, {"plus", "north"}, {"plus", "south"}} {
			n, e := w.cohort(rng, k[0], k[1], 50)
			for j := range n {
				all[j][0] += n[j]
				all[j][1] += e[j]
			}
			ingest(d, b, countBatch(k[0], k[1], n, e), "s"+k[0]+k[1], c)
		}
	}
	var popN, popD []int
	for _, a := range all {
		popN, popD = append(popN, a[0]), append(popD, a[1])
	}
	// pro/south: never seen.
	unseen := d.Fit.Curve(dims("pro", "south"), nil, 6)
	truth := w.truth("pro", "south")
	base := d.Fit.Curve(nil, nil, 6)
	pop := kaplanMeier(popN, popD)
	t.Logf("unseen pro/south: %s truth %s baseline only %s population %s", format(unseen), format(truth), format(base), format(pop))
	e, eb, ep := meanAbs(unseen, truth), meanAbs(base, truth), meanAbs(pop, truth)
	if e > 0.7*eb || e > 0.7*ep {
		t.Errorf("unseen key: error %.4f; want under 0.7 of the baseline's (%.4f) and of the population's (%.4f)", e, eb, ep)
	}
	f := d.Fit.Features
	t.Logf("features %v", f)
	if !(f["plan=pro"] < f["plan=plus"] && f["plan=plus"] < f["plan=basic"] && f["region=south"] < f["region=north"]) {
		t.Errorf("feature effects %v are not ordered as the truth's (pro < plus < basic, south < north)", f)
	}
	if got := d.Fit.Support[entityKey(dims("pro", "south"))]; got != 0 {
		t.Errorf("unseen key's support = %v, want 0", got)
	}

	// One small cohort of pro/south: its fit stays near the pooled truth, unlike its own
	// Kaplan–Meier curve, over several draws.
	var fitErr, kmErr float64
	for i := range 20 {
		dd := clone(d)
		n, e := w.cohort(rng, "pro", "south", 15)
		ingest(dd, b, countBatch("pro", "south", n, e), "rare", 100+i)
		fitErr += meanAbs(dd.Fit.Curve(dims("pro", "south"), nil, 6), truth) / 20
		kmErr += meanAbs(kaplanMeier(n, e), truth) / 20
		if got := dd.Fit.Support[entityKey(dims("pro", "south"))]; got != 15 {
			t.Fatalf("support of the rare key = %v, want 15", got)
		}
	}
	t.Logf("rare key: fit error %.4f, own Kaplan–Meier %.4f", fitErr, kmErr)
	if fitErr > 0.8*kmErr {
		t.Errorf("rare key: fit error %.4f is not under 0.8 of its own Kaplan–Meier error %.4f", fitErr, kmErr)
	}
}

// TestContext: a source-wide condition is learned as its own effect and does not leak into
// the entity effects; a request without the context gets the average condition.
func TestContext(t *testing.T) {
	w := testWorld()
	rng := rand.New(rand.NewPCG(5, 6))
	b := &Bindings{Target: "churn", Entity: []string{"plan"}, Contexts: []string{"site"}, Intervals: 6}
	d := &Data{}
	shift := map[string]float64{"a": 0.8, "b": -0.8}
	for c := range 30 {
		for _, p := range plans {
			for _, site := range []string{"a", "b"} {
				ww := w
				ww.region = map[string]float64{"": shift[site]}
				n, e := ww.cohort(rng, p, "", 60)
				x := countBatch(p, "", n, e)
				for i := range x.Counts {
					x.Counts[i].Dims["site"] = site
				}
				ingest(d, b, x, "c"+p+site, c)
			}
		}
	}
	for _, p := range plans {
		for _, site := range []string{"a", "b"} {
			ww := w
			ww.region = map[string]float64{"": shift[site]}
			got := d.Fit.Curve(map[string]string{"plan": p}, map[string]string{"site": site}, 6)
			if e := meanAbs(got, ww.truth(p, "")); e > 0.03 {
				t.Errorf("plan %s, site %s: %s truth %s, error %.4f > 0.03", p, site, format(got), format(ww.truth(p, "")), e)
			}
		}
	}
	if a, bb := d.Fit.Contexts["site=a"], d.Fit.Contexts["site=b"]; a-bb < 1.2 {
		t.Errorf("site effects a=%.3f b=%.3f; want them about 1.6 apart", a, bb)
	}
	avg := d.Fit.Curve(map[string]string{"plan": "plus"}, nil, 6)
	lo := d.Fit.Curve(map[string]string{"plan": "plus"}, map[string]string{"site": "b"}, 6)
	hi := d.Fit.Curve(map[string]string{"plan": "plus"}, map[string]string{"site": "a"}, 6)
	if !(hi[5] < avg[5] && avg[5] < lo[5]) {
		t.Errorf("without a site the curve should lie between the two sites' at the end: a %.3f, none %.3f, b %.3f", hi[5], avg[5], lo[5])
	}
}

func TestEdgeCases(t *testing.T) {
	b := bindings(3)
	t.Run("OneRecord", func(t *testing.T) {
		d := &Data{}
		ingest(d, b, countBatch("basic", "north", []int{200}, []int{20}), "a", 0)
		s := d.Fit.Curve(dims("basic", "north"), nil, 3)
		assertMonotone(t, s)
		// One interval with hazard 0.1; the later intervals carry it on.
		want := []float64{0.9, 0.81, 0.729}
		if e := maxAbs(s, want); e > 0.01 {
			t.Errorf("curve %s, want about %s", format(s), format(want))
		}
		if d.Fit.Seen[1] || d.Fit.Seen[2] || !d.Fit.Seen[0] {
			t.Errorf("seen = %v, want only the first interval", d.Fit.Seen)
		}
		if got := d.Fit.Support[entityKey(dims("basic", "north"))]; got != 200 {
			t.Errorf("support = %v, want 200", got)
		}
	})
	t.Run("ZeroAtRisk", func(t *testing.T) {
		d := &Data{}
		ingest(d, b, countBatch("basic", "north", []int{0}, []int{0}), "z", 0)
		if d.Fit != nil {
			t.Fatalf("a fit from nothing at risk: %+v", d.Fit)
		}
		ingest(d, b, countBatch("basic", "north", []int{200, 180}, []int{20, 18}), "a", 1)
		ref := &Data{}
		ingest(ref, b, countBatch("basic", "north", []int{200, 180}, []int{20, 18}), "a", 1)
		got, want := d.Fit.Curve(dims("basic", "north"), nil, 3), ref.Fit.Curve(dims("basic", "north"), nil, 3)
		for i := range got {
			if math.IsNaN(got[i]) || got[i] != want[i] {
				t.Fatalf("with a zero at-risk record %v, without %v", got, want)
			}
		}
	})
	t.Run("AllEvents", func(t *testing.T) {
		d := &Data{}
		ingest(d, b, countBatch("basic", "north", []int{40}, []int{40}), "a", 0)
		s := d.Fit.Curve(dims("basic", "north"), nil, 3)
		assertMonotone(t, s)
		if s[0] > 0.05 || s[2] > 0.001 {
			t.Errorf("every one had the event, curve %v; want it near 0", s)
		}
	})
	t.Run("NoEvents", func(t *testing.T) {
		d := &Data{}
		ingest(d, b, countBatch("basic", "north", []int{300, 300, 300}, []int{0, 0, 0}), "a", 0)
		s := d.Fit.Curve(dims("basic", "north"), nil, 3)
		assertMonotone(t, s)
		if s[2] < 0.98 {
			t.Errorf("no events at all, curve %s; want it near 1", format(s))
		}
	})
	t.Run("LongerThanSeen", func(t *testing.T) {
		// Hazard 0.2 in interval 1, 0.1 in 2; J = 5 carries 0.1 on.
		d := &Data{}
		bb := bindings(5)
		for i := range 10 {
			ingest(d, bb, countBatch("basic", "north", []int{500, 400}, []int{100, 40}), "a", i)
		}
		s := d.Fit.Curve(dims("basic", "north"), nil, 5)
		want := []float64{0.8, 0.72, 0.648, 0.5832, 0.52488}
		if e := maxAbs(s, want); e > 0.005 {
			t.Errorf("curve %s, want %s", format(s), format(want))
		}
	})
}

func TestPseudoCounts(t *testing.T) {
	b := bindings(3)
	x := &Batch{Curves: []Curve{{Target: "churn", Dims: dims("basic", "north"), Values: []numeric.Number{"0.8", "0.6", "0"}}}}
	d := &Data{}
	ingest(d, b, x, "f", 0)
	// n_j = W s_{j-1}, d_j = W (s_{j-1} - s_j).
	want := [][2]float64{{100, 20}, {80, 20}, {60, 60}}
	if len(d.Records) != 3 {
		t.Fatalf("%d records, want 3", len(d.Records))
	}
	for i, r := range d.Records {
		if !r.Pseudo || r.Interval != i+1 || math.Abs(r.AtRisk-want[i][0]) > 1e-9 || math.Abs(r.Events-want[i][1]) > 1e-9 {
			t.Errorf("record %d = %+v, want interval %d at risk %v events %v", i+1, r, i+1, want[i][0], want[i][1])
		}
	}
	// After the curve reaches 0 nothing is at risk: no more records.
	x.Curves[0].Values = []numeric.Number{"0", "0"}
	ingest(d, b, x, "g", 1)
	if len(d.Records) != 4 {
		t.Errorf("%d records, want 4 (a curve at 0 leaves no one at risk for interval 2)", len(d.Records))
	}
	// Many copies of one realized curve pull the fit onto it.
	d = &Data{}
	real := []numeric.Number{"0.9", "0.8", "0.72"}
	for i := range 30 {
		ingest(d, b, &Batch{Curves: []Curve{{Target: "churn", Dims: dims("plus", "south"), Values: real}}}, "c", i)
	}
	s := d.Fit.Curve(dims("plus", "south"), nil, 3)
	if e := maxAbs(s, []float64{0.9, 0.8, 0.72}); e > 0.01 {
		t.Errorf("curve from 30 realized curves %s, want about [0.9 0.8 0.72]", format(s))
	}
	if got := d.Fit.Support[entityKey(dims("plus", "south"))]; got != 30*PseudoSize {
		t.Errorf("support %v, want %v", got, 30*PseudoSize)
	}
}

func TestReingestReplaces(t *testing.T) {
	b := bindings(3)
	d := &Data{}
	x := countBatch("basic", "north", []int{100}, []int{10})
	ingest(d, b, x, "a", 0)
	ingest(d, b, x, "a", 0)
	if len(d.Records) != 1 {
		t.Errorf("the same event ingested twice holds %d records, want 1", len(d.Records))
	}
}

func maxAbs(a, b []float64) float64 {
	var m float64
	for i := range a {
		m = max(m, math.Abs(a[i]-b[i]))
	}
	return m
}
