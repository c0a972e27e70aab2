package regression

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/hippocam/hippocam/memory/numeric"
)

// world is a simulated panel: sales[store=sK,channel=C,week=T] = mu + store + channel +
// beta*T + noise.
type world struct {
	mu, beta, noise float64
	stores          []float64 // effect of store s0, s1, ...
	channels        map[string]float64
	rng             *rand.Rand
}

var salesBindings = Bindings{Target: "sales", Key: "store", Time: "week", Factors: []string{"channel"}, Family: Real}

func newWorld(seed uint64, stores int, storeSD float64) *world {
	w := &world{mu: 100, beta: 1.5, noise: 3, channels: map[string]float64{"online": 4, "shop": -4},
		rng: rand.New(rand.NewPCG(seed, 12))}
	for range stores {
		w.stores = append(w.stores, storeSD*w.rng.NormFloat64())
	}
	return w
}

func store(s int) string { return fmt.Sprintf("s%d", s) }

func storeIndex(t testing.TB, level string) int {
	t.Helper()
	var s int
	if _, err := fmt.Sscanf(level, "s%d", &s); err != nil {
		t.Fatalf("store %q: %v", level, err)
	}
	return s
}

// mean is the noise-free value of a point.
func (w *world) mean(s int, channel string, week int) float64 {
	return w.mu + w.stores[s] + w.channels[channel] + w.beta*float64(week)
}

// outcome draws one observed value of a point, written with two decimals.
func (w *world) outcome(s int, channel string, week int) Outcome {
	v := w.mean(s, channel, week) + w.noise*w.rng.NormFloat64()
	return Outcome{Target: "sales", Dims: map[string]string{"store": store(s), "channel": channel, "week": fmt.Sprint(week)},
		Value: numeric.Number(fmt.Sprintf("%.2f", v))}
}

// panel draws every store and channel at weeks from..to.
func (w *world) panel(from, to int) []Outcome {
	var out []Outcome
	for week := from; week <= to; week++ {
		for s := range w.stores {
			for _, c := range []string{"online", "shop"} {
				out = append(out, w.outcome(s, c, week))
			}
		}
	}
	return out
}

func ingest(t testing.TB, b Bindings, outcomes []Outcome) *Data {
	t.Helper()
	d := &Data{}
	Runtime{}.Ingest(d, &b, &Batch{Outcomes: outcomes}, numeric.Event{Source: "t1", Index: 1})
	if d.Fit == nil {
		t.Fatal("no fit after ingest")
	}
	return d
}

func value(t testing.TB, o Outcome) float64 {
	t.Helper()
	v, err := numeric.Float(o.Value)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestRecovery(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			w := newWorld(seed, 20, 10)
			train := w.panel(1, 12)
			held := w.panel(13, 14)
			d := ingest(t, salesBindings, train)
			f := d.Fit

			if !f.Trend || math.Abs(f.Beta-w.beta) > 0.3 {
				t.Errorf("trend %.3f (fitted %v), want %.1f within 0.3", f.Beta, f.Trend, w.beta)
			}
			if math.Abs(f.Sigma-w.noise) > 0.25*w.noise {
				t.Errorf("sigma %.3f, want %.1f within 25%%", f.Sigma, w.noise)
			}
			if math.Abs(f.KeyTau-10) > 4 {
				t.Errorf("store sd %.2f, want 10 within 4", f.KeyTau)
			}
			if len(f.Keys) != len(w.stores) {
				t.Fatalf("%d stores fitted, want %d", len(f.Keys), len(w.stores))
			}
			est, truth := make([]float64, len(f.Keys)), make([]float64, len(f.Keys))
			for i, k := range f.Keys {
				est[i], truth[i] = k.Effect, w.stores[storeIndex(t, k.Level)]
			}
			if r := correlation(est, truth); r <= 0.95 {
				t.Errorf("store effects correlate %.3f with the truth, want > 0.95", r)
			}
			if len(f.Factors) != 1 || len(f.Factors[0].Levels) != 2 {
				t.Fatalf("factors %+v, want channel with 2 levels", f.Factors)
			}
			gap := f.Factors[0].Levels[0].Effect - f.Factors[0].Levels[1].Effect // online - shop
			if math.Abs(gap-8) > 1 {
				t.Errorf("channel gap %.2f, want 8 within 1", gap)
			}

			model, latest, mean := heldOutErrors(t, d, train, held)
			t.Logf("mean abs error: model %.3f, copy latest %.3f, series mean %.3f", model, latest, mean)
			if model >= latest || model >= mean {
				t.Errorf("model error %.3f does not beat copying the latest value (%.3f) and the series mean (%.3f)", model, latest, mean)
			}
		})
	}
}

// heldOutErrors is the mean absolute error on held of the model, of copying the series'
// latest training value, and of the series' training mean.
func heldOutErrors(t *testing.T, d *Data, train, held []Outcome) (model, latest, mean float64) {
	type agg struct {
		week, last, sum float64
		n               int
	}
	series := map[string]*agg{}
	label := func(o Outcome) string { return o.Dims["store"] + "/" + o.Dims["channel"] }
	for _, o := range train {
		a := series[label(o)]
		if a == nil {
			a = &agg{week: -1}
			series[label(o)] = a
		}
		var week float64
		fmt.Sscan(o.Dims["week"], &week)
		v := value(t, o)
		if week > a.week {
			a.week, a.last = week, v
		}
		a.sum += v
		a.n++
	}
	for _, o := range held {
		v := value(t, o)
		a := series[label(o)]
		fc := d.Fit.Predict(d.Bindings, o.Dims)
		model += math.Abs(fc.Value - v)
		latest += math.Abs(a.last - v)
		mean += math.Abs(a.sum/float64(a.n) - v)
	}
	n := float64(len(held))
	return model / n, latest / n, mean / n
}

func correlation(x, y []float64) float64 {
	var mx, my float64
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx /= float64(len(x))
	my /= float64(len(y))
	var sxy, sxx, syy float64
	for i := range x {
		sxy += (x[i] - mx) * (y[i] - my)
		sxx += (x[i] - mx) * (x[i] - mx)
		syy += (y[i] - my) * (y[i] - my)
	}
	return sxy / math.Sqrt(sxx*syy)
}

// TestPoolingEstimated checks that the amount of pooling follows the data: with no real
// difference between stores their spread is estimated near zero, and with large differences
// each store keeps nearly its own level.
func TestPoolingEstimated(t *testing.T) {
	flat := newWorld(7, 20, 0)
	d := ingest(t, salesBindings, flat.panel(1, 12))
	if d.Fit.KeyTau > 1.5 {
		t.Errorf("store sd %.2f with identical stores, want < 1.5", d.Fit.KeyTau)
	}
	if d.Fit.Iterations >= maxIterations {
		t.Errorf("EM did not settle in %d steps with a spread near zero", d.Fit.Iterations)
	}
	wide := newWorld(8, 20, 50)
	d = ingest(t, salesBindings, wide.panel(1, 12))
	for _, k := range d.Fit.Keys {
		s := storeIndex(t, k.Level)
		// 24 outcomes of sd 3: a store's own mean is within about 0.6 of its level.
		if math.Abs(k.Effect-(wide.stores[s]-mean(wide.stores))) > 3 {
			t.Errorf("store %s: effect %.2f, true %.2f (centred): over-shrunk", k.Level, k.Effect, wide.stores[s]-mean(wide.stores))
		}
	}
}

func mean(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

func TestOneRecord(t *testing.T) {
	d := ingest(t, salesBindings, []Outcome{{Target: "sales", Dims: map[string]string{"store": "north", "week": "11"}, Value: "118.4"}})
	fc := d.Fit.Predict(d.Bindings, map[string]string{"store": "north", "week": "12"})
	if math.Abs(fc.Value-118.4) > 1e-9 {
		t.Errorf("forecast %v, want 118.4", fc.Value)
	}
	if fc.Support != 1 || fc.SD < 0.1/math.Sqrt(12)*0.999 {
		t.Errorf("support %d, sd %v: want 1 and at least the floor", fc.Support, fc.SD)
	}
}

func TestAllEqual(t *testing.T) {
	var outs []Outcome
	for _, s := range []string{"north", "south", "east"} {
		for _, c := range []string{"online", "shop"} {
			for week := 1; week <= 4; week++ {
				outs = append(outs, Outcome{Target: "sales", Dims: map[string]string{"store": s, "channel": c, "week": fmt.Sprint(week)}, Value: "42.0"})
			}
		}
	}
	d := ingest(t, salesBindings, outs)
	floor := 0.1 / math.Sqrt(12)
	for _, dims := range []map[string]string{
		{"store": "north", "channel": "shop", "week": "5"},
		{"store": "west", "channel": "kiosk", "week": "9"},
		{"store": "south"},
	} {
		fc := d.Fit.Predict(d.Bindings, dims)
		if math.Abs(fc.Value-42) > 1e-6 {
			t.Errorf("%v: forecast %v, want 42", dims, fc.Value)
		}
		if fc.SD < floor*0.999 || fc.SD > 0.1 {
			t.Errorf("%v: sd %v, want between the floor %.4f and 0.1", dims, fc.SD, floor)
		}
	}
}

func TestNewKey(t *testing.T) {
	w := newWorld(4, 20, 10)
	d := ingest(t, salesBindings, w.panel(1, 12))
	f := d.Fit
	fresh := f.Predict(d.Bindings, map[string]string{"store": "s99", "channel": "online", "week": "13"})
	want := f.Mu + f.Factors[0].Levels[0].Effect + f.Beta*(13-f.TimeCenter)
	if math.Abs(fresh.Value-want) > 1e-9 {
		t.Errorf("new store: forecast %v, want mu + channel + trend = %v", fresh.Value, want)
	}
	if fresh.Support != 0 {
		t.Errorf("new store: support %d, want 0", fresh.Support)
	}
	seen := f.Predict(d.Bindings, map[string]string{"store": "s3", "channel": "online", "week": "13"})
	if fresh.SD <= seen.SD*1.5 {
		t.Errorf("new store sd %.3f, a seen store's %.3f: want clearly larger", fresh.SD, seen.SD)
	}
	if seen.Support != 24 {
		t.Errorf("seen store support %d, want 24", seen.Support)
	}
	// Without a week, the point is forecast at the latest week observed.
	now := f.Predict(d.Bindings, map[string]string{"store": "s3", "channel": "online"})
	at12 := f.Predict(d.Bindings, map[string]string{"store": "s3", "channel": "online", "week": "12"})
	if now.Value != at12.Value {
		t.Errorf("point without a week: %v, want the week-12 forecast %v", now.Value, at12.Value)
	}
}

func TestTrendNeedsThreeTimes(t *testing.T) {
	outs := func(weeks ...int) []Outcome {
		var o []Outcome
		for _, week := range weeks {
			for _, s := range []string{"north", "south"} {
				o = append(o, Outcome{Target: "sales", Dims: map[string]string{"store": s, "week": fmt.Sprint(week)},
					Value: numeric.Number(fmt.Sprint(10 * week))})
			}
		}
		return o
	}
	d := ingest(t, salesBindings, outs(1, 2, 2, 1))
	if d.Fit.Trend || d.Fit.Beta != 0 {
		t.Errorf("two weeks: trend %v, beta %v; want none", d.Fit.Trend, d.Fit.Beta)
	}
	d = ingest(t, salesBindings, outs(1, 2, 3))
	if !d.Fit.Trend || math.Abs(d.Fit.Beta-10) > 0.01 {
		t.Errorf("three weeks: trend %v, beta %v; want 10", d.Fit.Trend, d.Fit.Beta)
	}
	noTime := salesBindings
	noTime.Time = ""
	d = ingest(t, noTime, outs(1, 2, 3))
	if d.Fit.Trend {
		t.Error("time unbound: a trend was fitted")
	}
}

func TestDuplicatesCountOnce(t *testing.T) {
	d := &Data{}
	rt := Runtime{}
	b := salesBindings
	line := func(v string) *Batch {
		return &Batch{Outcomes: []Outcome{
			{Target: "sales", Dims: map[string]string{"store": "north", "week": "10"}, Value: numeric.Number(v)},
			{Target: "sales", Dims: map[string]string{"store": "north", "week": "11"}, Value: "20"},
		}}
	}
	rt.Ingest(d, &b, line("10"), numeric.Event{Source: "a", Index: 1})
	rt.Ingest(d, &b, line("12"), numeric.Event{Source: "c", Index: 3})
	rt.Ingest(d, &b, line("11"), numeric.Event{Source: "b", Index: 2})
	if d.Fit.Observations != 2 || rt.Entries(d) != 6 {
		t.Fatalf("%d observations of %d records, want 2 of 6", d.Fit.Observations, rt.Entries(d))
	}
	fc := d.Fit.Predict(&b, map[string]string{"store": "north"})
	if fc.Support != 2 || math.Abs(fc.Value-16) > 1e-9 {
		t.Errorf("forecast %v (support %d), want the mean of 12 (the latest event's) and 20 = 16, support 2", fc.Value, fc.Support)
	}
	// Within one event, the later line wins.
	d2 := ingest(t, b, []Outcome{
		{Target: "sales", Dims: map[string]string{"store": "north", "week": "10"}, Value: "5"},
		{Target: "sales", Dims: map[string]string{"store": "north", "week": "10"}, Value: "7"},
	})
	if got := d2.Fit.Predict(&b, map[string]string{"store": "north"}); got.Value != 7 || got.Support != 1 {
		t.Errorf("repeated line: %v (support %d), want 7 (support 1)", got.Value, got.Support)
	}
}

func TestFamilies(t *testing.T) {
	constant := func(family string, v string) {
		t.Helper()
		b := Bindings{Target: "q", Key: "k", Family: family}
		var outs []Outcome
		for _, k := range []string{"a", "b", "c", "d"} {
			outs = append(outs, Outcome{Target: "q", Dims: map[string]string{"k": k}, Value: numeric.Number(v)})
		}
		d := ingest(t, b, outs)
		want, _ := numeric.Float(numeric.Number(v))
		fc := d.Fit.Predict(&b, map[string]string{"k": "a"})
		if math.Abs(fc.Value-want) > 1e-9*math.Max(1, want) || fc.SD <= 0 || fc.SD > 0.05*math.Max(math.Abs(want), 0.01) {
			t.Errorf("%s, all %s: forecast %v ± %v", family, v, fc.Value, fc.SD)
		}
	}
	constant(Positive, "50")
	constant(Count, "7")
	constant(Probability, "0.25")
	constant(Real, "-3.5")

	rng := rand.New(rand.NewPCG(5, 5))
	draw := func(family string, gen func() float64, format string) []Outcome {
		var outs []Outcome
		for _, k := range []string{"a", "b", "c", "d"} {
			for week := 1; week <= 8; week++ {
				outs = append(outs, Outcome{Target: "q", Dims: map[string]string{"k": k, "w": fmt.Sprint(week)},
					Value: numeric.Number(fmt.Sprintf(format, gen()))})
			}
		}
		return outs
	}
	t.Run("positive", func(t *testing.T) {
		b := Bindings{Target: "q", Key: "k", Factors: []string{}, Family: Positive}
		d := ingest(t, b, draw(Positive, func() float64 { return math.Exp(3 + 0.2*rng.NormFloat64()) }, "%.3f"))
		fc := d.Fit.Predict(&b, map[string]string{"k": "z"})
		if fc.Value <= 0 || math.Abs(math.Log(fc.Value)-3) > 0.1 {
			t.Errorf("lognormal(3, 0.2): forecast %v, want about e^3 = %.1f", fc.Value, math.Exp(3))
		}
		if math.Abs(fc.SD-0.2*fc.Value) > 0.06*fc.Value {
			t.Errorf("lognormal(3, 0.2): sd %v, want about 0.2 * forecast", fc.SD)
		}
	})
	t.Run("probability", func(t *testing.T) {
		b := Bindings{Target: "q", Key: "k", Family: Probability}
		d := ingest(t, b, draw(Probability, func() float64 { return 1 / (1 + math.Exp(-(-1 + 0.3*rng.NormFloat64()))) }, "%.3f"))
		fc := d.Fit.Predict(&b, map[string]string{"k": "b"})
		if want := 1 / (1 + math.Exp(1)); math.Abs(fc.Value-want) > 0.03 {
			t.Errorf("forecast %v, want about %.3f", fc.Value, want)
		}
	})
	t.Run("count", func(t *testing.T) {
		b := Bindings{Target: "q", Key: "k", Family: Count}
		d := ingest(t, b, draw(Count, func() float64 { return float64(rng.IntN(2)) }, "%.0f"))
		fc := d.Fit.Predict(&b, map[string]string{"k": "b"})
		if fc.Value < 0 || fc.Value > 1 {
			t.Errorf("counts of 0 and 1: forecast %v, want within [0, 1]", fc.Value)
		}
	})
}

func TestDecimals(t *testing.T) {
	for lit, want := range map[string]int{"118.45": 2, "120": 0, "1.2e3": -2, "5E-2": 2, "-0.5": 1, "3.25e+1": 1} {
		if got := decimals(lit); got != want {
			t.Errorf("decimals(%s) = %d, want %d", lit, got, want)
		}
	}
}

// TestSmallDataStaysFinite fits many small random data sets (few records, repeated values,
// missing dimensions, every family) and checks that the fit and its forecasts stay finite and
// within the family's range, and that the data encodes as JSON.
func TestSmallDataStaysFinite(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	pick := func(options ...string) string { return options[rng.IntN(len(options))] }
	for trial := range 500 {
		family := Families[rng.IntN(len(Families))]
		b := Bindings{Target: "q", Key: pick("k", ""), Time: pick("t", ""), Factors: []string{"f"}, Family: family}
		var outs []Outcome
		for range 1 + rng.IntN(6) {
			dims := map[string]string{}
			for _, dim := range []struct {
				name    string
				options []string
			}{{"k", []string{"a", "b", "c"}}, {"t", []string{"1", "2", "3", "4"}}, {"f", []string{"x", "y"}}} {
				if rng.IntN(5) > 0 {
					dims[dim.name] = pick(dim.options...)
				}
			}
			v := map[string][]string{
				Real:        {"-1.5", "0", "2", "2", "10.25"},
				Positive:    {"0.5", "2", "2", "300"},
				Count:       {"0", "1", "1", "7"},
				Probability: {"0", "0.5", "0.5", "1", "0.125"},
			}[family]
			outs = append(outs, Outcome{Target: "q", Dims: dims, Value: numeric.Number(pick(v...))})
		}
		d := ingest(t, b, outs)
		if _, err := json.Marshal(d); err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		for _, dims := range []map[string]string{{"k": "a", "t": "5", "f": "x"}, {"k": "z"}, {}} {
			fc := d.Fit.Predict(&b, dims)
			bad := math.IsNaN(fc.Value) || math.IsInf(fc.Value, 0) || math.IsNaN(fc.SD) || math.IsInf(fc.SD, 0) || fc.SD <= 0
			switch family {
			case Positive:
				bad = bad || fc.Value <= 0
			case Count:
				bad = bad || fc.Value < 0
			case Probability:
				bad = bad || fc.Value <= 0 || fc.Value >= 1
			}
			if bad {
				t.Fatalf("trial %d (%s, %v): forecast %v ± %v for %v", trial, family, outs, fc.Value, fc.SD, dims)
			}
		}
	}
}
