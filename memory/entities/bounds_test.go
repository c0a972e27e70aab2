package entities

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hippocam/hippocam/memory/numeric"
)

// TestCheckBatchBounds: the bound fields must lie within the magnitudes the tracker takes; the
// bounds themselves are admitted.
func TestCheckBatchBounds(t *testing.T) {
	for _, c := range []struct {
		name            string
		freq, bw, power string
		kind, err       string
	}{
		{"OKBoundsSD", "1e100", "1e-100", "-1e100", ScaleSD, ""},
		{"OKBoundsExtent", "-1e100", "1e100", "1e100", ScaleExtent, ""},
		{"OKUnderflowToZero", "1e-400", "1e-100", "0e200", ScaleSD, ""},
		{"ErrScaleSubnormal", "101.5", "1e-320", "-45.1", ScaleExtent,
			"detection 1: the scale bw=1e-320 is too small: the tracker takes scales from 1e-100 to 1e+100"},
		{"ErrScaleTiny", "101.5", "9.9e-101", "-45.1", ScaleSD,
			"detection 1: the scale bw=9.9e-101 is too small: the tracker takes scales from 1e-100 to 1e+100"},
		{"ErrScaleHuge", "101.5", "1.01e100", "-45.1", ScaleSD,
			"detection 1: the scale bw=1.01e100 is too large: the tracker takes scales from 1e-100 to 1e+100"},
		{"ErrIdentityHuge", "-1e308", "0.20", "-45.1", ScaleExtent,
			"detection 1: the identity freq=-1e308 is too large: the tracker takes magnitudes up to 1e+100"},
		{"ErrIdentityJustOver", "1.0000001e100", "0.20", "-45.1", ScaleExtent,
			"detection 1: the identity freq=1.0000001e100 is too large: the tracker takes magnitudes up to 1e+100"},
		{"ErrValueHuge", "101.5", "0.20", "1e101", ScaleExtent,
			"detection 1: the value power=1e101 is too large: the tracker takes magnitudes up to 1e+100"},
		{"ErrValueNegativeHuge", "101.5", "0.20", "-3e200", ScaleExtent,
			"detection 1: the value power=-3e200 is too large: the tracker takes magnitudes up to 1e+100"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := Bindings{Identity: "freq", Scale: "bw", ScaleKind: c.kind, Values: []string{"power"}}
			event := fmt.Sprintf("det freq=101.5 bw=0.20 power=-45.1\ndet freq=%s bw=%s power=%s\n", c.freq, c.bw, c.power)
			x := Batch{Detections: []Detection{det(c.freq, c.bw, c.power), det("101.5", "0.20", "-45.1")}}
			err := Runtime{}.CheckBatch(&b, &x, event)
			if c.err == "" {
				if err != nil {
					t.Errorf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || err.Error() != c.err {
				t.Errorf("error %v, want %q", err, c.err)
			}
		})
	}
	// A field beyond the bound ones is ignored, so its magnitude is not checked.
	x := Batch{Detections: []Detection{{"freq": "101.5", "bw": "0.20", "power": "-45.1", "snr": "1e300"}}}
	if err := (Runtime{}).CheckBatch(&testBindings, &x, "det freq=101.5 bw=0.20 power=-45.1 snr=1e300"); err != nil {
		t.Errorf("extra field: %v", err)
	}
}

// TestBoundsStayFinite feeds detections made only of the bounds (and of numbers that parse to
// 0 however large their exponent) for long enough that a plain sum of x/sd² would overflow, with
// either kind of scale, in order, out of order and after a Forget: every state must encode as
// JSON, every advisory must be finite, and the entities at the extremes must be found there.
func TestBoundsStayFinite(t *testing.T) {
	identities := []string{"1e100", "-1e100", "0", "1e-400"}
	scales := []string{"1e-100", "1e100"}
	values := []string{"1e100", "-1e100", "0e200", "0e400", "9.99e99", "1e-100"}
	for _, kind := range []string{ScaleSD, ScaleExtent} {
		t.Run(kind, func(t *testing.T) {
			b := Bindings{Identity: "freq", Scale: "bw", ScaleKind: kind, Values: []string{"power"}}
			rng := rand.New(rand.NewPCG(11, 12))
			var d Data
			const n = 200
			for i := range n {
				// Two entities pinned at the extremes with the finest scale, seen every time,
				// then bound-made clutter.
				x := Batch{Requested: []string{"power"}, Detections: []Detection{
					det("1e100", "1e-100", values[rng.IntN(len(values))]),
					det("-1e100", "1e-100", values[rng.IntN(len(values))]),
				}}
				for range rng.IntN(3) {
					x.Detections = append(x.Detections, det(identities[rng.IntN(len(identities))], scales[rng.IntN(len(scales))], values[rng.IntN(len(values))]))
				}
				event := text(&x)
				if err := (Runtime{}).CheckBatch(&b, &x, event); err != nil {
					t.Fatalf("event %d: %v\n%s", i, err, event)
				}
				index := i
				if i == n-1 {
					index = n / 2 // an event out of order: the tracks are rebuilt
				}
				Runtime{}.Ingest(&d, &b, &x, numeric.Event{Source: fmt.Sprintf("t%03d", i), Index: index})
				if _, err := json.Marshal(&d); err != nil {
					t.Fatalf("after event %d: %v", i, err)
				}
			}
			Runtime{}.Forget(&d, []string{"t007"})
			if _, err := json.Marshal(&d); err != nil {
				t.Fatalf("after Forget: %v", err)
			}
			if s2, known := d.Noise[0].variance(); !known || !(s2 > 0) || math.IsInf(s2, 0) {
				t.Errorf("noise variance %g (known %v), want finite and positive", s2, known)
			}
			for _, f := range []float64{1e100, -1e100} {
				near := confirmedNear(&d, f, 1e-6*math.Abs(f), n/2)
				if len(near) != 1 {
					t.Errorf("%d confirmed tracks at %g with support ≥ %d, want 1", len(near), f, n/2)
					continue
				}
				if tr := near[0]; tr.P <= 0 || math.IsInf(tr.P, 0) || tr.SD <= 0 {
					t.Errorf("track at %g: P %g, SD %g", f, tr.P, tr.SD)
				}
			}
			cur := Batch{Requested: []string{"power"}, Detections: []Detection{det("1e100", "1e-100", "1e100"), det("-1e100", "1e100", "-1e100")}}
			adv := Runtime{}.Advise(&d, &b, &cur, numeric.Event{Source: "cur", Index: n})
			if len(adv.Lines) < 2 {
				t.Errorf("advisory %q, want both extreme entities", adv.Lines)
			}
			for _, line := range adv.Lines {
				if strings.Contains(line, "NaN") || strings.Contains(line, "Inf") {
					t.Errorf("advisory line %q", line)
				}
			}
		})
	}
}

// TestStepBounds: a resolution is at most the largest magnitude the tracker takes, however the
// literal is written, and never NaN.
func TestStepBounds(t *testing.T) {
	for _, c := range []struct {
		n    numeric.Number
		want float64
	}{
		{"0e200", 1e100},
		{"0e999", 1e100},
		{"1e100", 1e100},
		{"1e-100", 1e-100},
		{"1e-400", 0},
		{"0.5e-99999999999999999999", 0},
		{"0.5e99999999999999999999", 1e100},
	} {
		if got := step(c.n); !(math.Abs(got-c.want) <= 1e-12*c.want) {
			t.Errorf("step(%s) = %g, want %g", c.n, got, c.want)
		}
	}
}

// TestRefitIdentity: the identity estimate is the precision-weighted mean, m = Σ x/sd² / Σ
// 1/sd², with P = c / Σ 1/sd², for ordinary sds (to the last bit of the plain sums) and for sds
// at both bounds at once, where 1/sd² spans more than a float64 can hold.
func TestRefitIdentity(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 20 {
		var tr Track
		var w, wx float64
		for i := range 1 + rng.IntN(30) {
			sd := 0.01 + rng.Float64()*3
			x := 100 + rng.NormFloat64()*sd
			tr.Sightings = append(tr.Sightings, Sighting{Record{X: x, SD: sd, Values: []float64{0}}, i})
			w += 1 / (sd * sd)
			wx += x / (sd * sd)
		}
		tr.Values = []Estimate{{Observed: []float64{0}}}
		a := &association{c: 1.7, gated: []bool{false}, sigma2: []float64{0}}
		a.refit(&tr)
		if tr.M != wx/w || tr.P != 1.7/w {
			t.Errorf("m %v P %v, want %v and %v", tr.M, tr.P, wx/w, 1.7/w)
		}
	}
	fine := minScale / math.Sqrt(12)
	tr := Track{Values: []Estimate{{Observed: []float64{0, 0, 0}}}, Sightings: []Sighting{
		{Record{X: maxMagnitude, SD: fine, Values: []float64{0}}, 0},
		{Record{X: -maxMagnitude, SD: maxMagnitude, Values: []float64{0}}, 1},
		{Record{X: maxMagnitude, SD: fine, Values: []float64{0}}, 2},
	}}
	a := &association{c: calibrationMax, gated: []bool{false}, sigma2: []float64{0}}
	a.refit(&tr)
	if want := calibrationMax * fine * fine / 2; tr.M != maxMagnitude || math.Abs(tr.P-want) > 1e-12*want {
		t.Errorf("m %g P %g, want %g and %g", tr.M, tr.P, maxMagnitude, want)
	}
}
