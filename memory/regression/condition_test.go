package regression

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hippocam/hippocam/memory/numeric"
)

// parsed is one forecast line read back as the simulated agent reads it.
type parsed struct {
	value, sd float64
	support   int
}

// forecasts parses the first n lines of adv as forecast lines.
func forecasts(t *testing.T, adv numeric.Advice, n int) []parsed {
	t.Helper()
	if len(adv.Lines) < n {
		t.Fatalf("%d lines, want at least %d forecasts: %q", len(adv.Lines), n, adv.Lines)
	}
	out := make([]parsed, n)
	for i := range n {
		m := forecastLine.FindStringSubmatch(adv.Lines[i])
		if m == nil {
			t.Fatalf("line %d %q is not a forecast line", i+1, adv.Lines[i])
		}
		out[i].value, _ = strconv.ParseFloat(m[2], 64)
		out[i].sd, _ = strconv.ParseFloat(m[3], 64)
		out[i].support, _ = strconv.Atoi(m[4])
	}
	return out
}

// conditioned is the unrounded forecast of one requested point given the current batch.
func conditioned(d *Data, current *Batch, ev numeric.Event, p numeric.Key) Forecast {
	return d.Fit.conditioned(d.Bindings, visibleOutcomes(d, d.Bindings, current, ev), current.Requested).forecast(present(p.Dims))
}

// storeOutcome is an outcome of store s (any name) with a value written with two decimals.
func storeOutcome(s, channel string, week int, v float64) Outcome {
	return Outcome{Target: "sales", Dims: map[string]string{"store": s, "channel": channel, "week": fmt.Sprint(week)},
		Value: numeric.Number(fmt.Sprintf("%.2f", v))}
}

// TestConditionNewKey: a store the cluster has never seen, with three weeks visible in the
// current task, is forecast from its own level and the fitted trend, not from the pooled mean.
func TestConditionNewKey(t *testing.T) {
	w := newWorld(51, 20, 10)
	d := ingest(t, salesBindings, w.panel(1, 12))
	f := d.Fit
	rng := rand.New(rand.NewPCG(51, 1))
	level := 35.0 // the new store's effect: far outside the other stores' spread of 10
	var shown []Outcome
	sum := 0.0
	for week := 10; week <= 12; week++ {
		o := storeOutcome("new", "online", week, w.mu+level+w.channels["online"]+w.beta*float64(week)+w.noise*rng.NormFloat64())
		shown = append(shown, o)
		sum += value(t, o)
	}
	ask := []numeric.Key{request("new", "online", "13")}
	ev := numeric.Event{Source: "now", Index: 2}
	without := forecasts(t, Runtime{}.Advise(d, &salesBindings, &Batch{Requested: ask}, ev), 1)[0]
	with := forecasts(t, Runtime{}.Advise(d, &salesBindings, &Batch{Requested: ask, Outcomes: shown}, ev), 1)[0]

	// The outcomes' level plus the trend from their mean week (11) to week 13.
	own := sum/3 + f.Beta*2
	if math.Abs(with.value-own) > 3 {
		t.Errorf("forecast %.2f, want near the store's own level plus trend %.2f (within 3: the little pooling left)", with.value, own)
	}
	pooled := f.Mu + f.Factors[0].Levels[0].Effect + f.Beta*(13-f.TimeCenter)
	// Without the outcomes the line is the fresh-store forecast, written in units (sd about 10).
	if math.Abs(without.value-pooled) > 0.5 || math.Abs(with.value-pooled) < 25 {
		t.Errorf("forecast %.2f without the outcomes, %.2f with them; the pooled level is %.2f", without.value, with.value, pooled)
	}
	// The brief's closed form for the store's effect alone, the other effects held at the fit:
	// prior N(0, tau_a^2), residuals r_i, posterior mean (sum r_i / sigma^2) / (1/tau_a^2 + n/sigma^2).
	s2, a2 := f.Sigma*f.Sigma, f.KeyTau*f.KeyTau
	r := 0.0
	for _, o := range shown {
		week, _ := strconv.Atoi(o.Dims["week"])
		r += value(t, o) - (f.Mu + f.Factors[0].Levels[0].Effect + f.Beta*(float64(week)-f.TimeCenter))
	}
	closed := pooled + (r/s2)/(1/a2+3/s2)
	got := conditioned(d, &Batch{Requested: ask, Outcomes: shown}, ev, ask[0])
	if math.Abs(got.Value-closed) > 0.05*f.Sigma {
		t.Errorf("forecast %.3f, the closed form with the other effects fixed gives %.3f: want within 0.05 sigma", got.Value, closed)
	}
	if with.support != 3 || without.support != 0 {
		t.Errorf("support %d with the outcomes, %d without: want 3 and 0", with.support, without.support)
	}
	// The predictive sd: about sqrt(sigma^2 + 1/(1/tau^2 + 3/sigma^2)), far below the fresh draw's.
	wantSD := math.Sqrt(s2 + 1/(1/a2+3/s2))
	if math.Abs(with.sd-wantSD) > 0.1*wantSD || with.sd > without.sd/2 {
		t.Errorf("sd %.2f with the outcomes (want about %.2f), %.2f without", with.sd, wantSD, without.sd)
	}
}

// TestConditionSeenKeyAgrees: outcomes of a seen store that say what the fit expects move its
// forecast by no more than their rounding, add to its support and do not widen it.
func TestConditionSeenKeyAgrees(t *testing.T) {
	w := newWorld(52, 20, 10)
	d := ingest(t, salesBindings, w.panel(1, 12))
	var shown []Outcome
	for week := 13; week <= 14; week++ {
		fc := d.Fit.Predict(&salesBindings, request("s3", "online", fmt.Sprint(week)).Dims)
		shown = append(shown, storeOutcome("s3", "online", week, fc.Value))
	}
	ask := []numeric.Key{request("s3", "online", "15")}
	ev := numeric.Event{Source: "now", Index: 2}
	before := conditioned(d, &Batch{Requested: ask}, ev, ask[0])
	after := conditioned(d, &Batch{Requested: ask, Outcomes: shown}, ev, ask[0])
	// Each outcome is off the fit by at most 0.005 (two decimals).
	if math.Abs(after.Value-before.Value) > 0.005 {
		t.Errorf("forecast %.4f with agreeing outcomes, %.4f without: want within 0.005", after.Value, before.Value)
	}
	line := forecasts(t, Runtime{}.Advise(d, &salesBindings, &Batch{Requested: ask, Outcomes: shown}, ev), 1)[0]
	if line.support != 26 || before.Support != 24 {
		t.Errorf("support %d, then %d: want 24, then 26", before.Support, line.support)
	}
	if after.SD > before.SD {
		t.Errorf("sd %.3f with the outcomes, %.3f without: the outcomes widened it", after.SD, before.SD)
	}
}

// TestConditionHeldOutcome: outcomes the data already holds change nothing, even in another
// order; the same point with another value from a later event replaces the held one, from an
// earlier event it is ignored (as Ingest decides).
func TestConditionHeldOutcome(t *testing.T) {
	w := newWorld(53, 10, 10)
	train := w.panel(1, 12)
	d := ingest(t, salesBindings, train) // event index 1
	ask := []numeric.Key{request("s1", "online", "13"), request("s2", "shop", "13")}
	bare := Runtime{}.Advise(d, &salesBindings, &Batch{Requested: ask}, numeric.Event{Source: "now", Index: 2})
	held := []Outcome{train[len(train)-1], train[len(train)-20], train[3]}
	for _, outs := range [][]Outcome{held, {held[2], held[0], held[1]}} {
		adv := Runtime{}.Advise(d, &salesBindings, &Batch{Requested: ask, Outcomes: outs}, numeric.Event{Source: "now", Index: 2})
		if !reflect.DeepEqual(adv, bare) {
			t.Errorf("held outcomes changed the advice:\n%v\nwant\n%v", adv, bare)
		}
	}
	// s1 online week 12, written 6 higher.
	var changed Outcome
	for _, o := range train {
		if o.Dims["store"] == "s1" && o.Dims["channel"] == "online" && o.Dims["week"] == "12" {
			changed = storeOutcome("s1", "online", 12, value(t, o)+6)
		}
	}
	later := Runtime{}.Advise(d, &salesBindings, &Batch{Requested: ask, Outcomes: []Outcome{changed}}, numeric.Event{Source: "now", Index: 2})
	earlier := Runtime{}.Advise(d, &salesBindings, &Batch{Requested: ask, Outcomes: []Outcome{changed}}, numeric.Event{Source: "old", Index: 0})
	if !reflect.DeepEqual(earlier.Lines, bare.Lines) {
		t.Errorf("an earlier event's value replaced the later one held:\n%q\nwant\n%q", earlier.Lines, bare.Lines)
	}
	if reflect.DeepEqual(later.Lines, bare.Lines) {
		t.Error("a later event's new value for a held point changed nothing")
	}
	now := &Batch{Requested: ask, Outcomes: []Outcome{changed}}
	b, a := conditioned(d, &Batch{Requested: ask}, numeric.Event{Index: 2}, ask[0]), conditioned(d, now, numeric.Event{Index: 2}, ask[0])
	if a.Value <= b.Value+0.1 || a.Value >= b.Value+6 || a.Support != b.Support {
		t.Errorf("s1 after its week 12 was raised by 6: %.3f (support %d), before %.3f (support %d): want higher by less than 6, same support",
			a.Value, a.Support, b.Value, b.Support)
	}
}

// refitAt fits obs with the variance components held at f's: the exact posterior the
// conditioned forecast should reproduce.
func refitAt(t *testing.T, b *Bindings, obs []observation, f *Fit) *Fit {
	t.Helper()
	d := layout(b, obs)
	m := newMixed(d, d.rows(obs))
	est := variances{sigma2: f.Sigma * f.Sigma, tauA2: f.KeyTau * f.KeyTau}
	for _, fl := range d.factors {
		i := slices.IndexFunc(f.Factors, func(ff FactorFit) bool { return ff.Dim == fl.dim })
		if i < 0 {
			t.Fatalf("factor %s is not in the fit", fl.dim)
		}
		est.tauF2 = append(est.tauF2, f.Factors[i].Tau*f.Factors[i].Tau)
	}
	if !d.keyTerm || d.trend != f.Trend || len(d.factors) != len(f.Factors) {
		t.Fatal("the current outcomes change the model's terms")
	}
	return m.report(est, obs)
}

// TestConditionMatchesRefit compares the conditioned forecasts with refits that ingest the
// current outcomes: exactly (to 1e-6, relative) when the refit keeps the variance components,
// and, when it re-estimates them too, forecast and sd both within 0.15 of the refit's sd (the
// largest gaps over these seeds are about 0.12: a new store 2 sd out raises tau_a, and the
// shifted stores raise sigma).
func TestConditionMatchesRefit(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			w := newWorld(60+seed, 20, 10)
			train := w.panel(1, 12)
			d := ingest(t, salesBindings, train)
			b := &salesBindings
			rng := rand.New(rand.NewPCG(seed, 2))
			draw := func(level float64, channel string, week int) float64 {
				return w.mu + level + w.channels[channel] + w.beta*float64(week) + w.noise*rng.NormFloat64()
			}
			shown := []Outcome{
				storeOutcome("n1", "online", 11, draw(20, "online", 11)),
				storeOutcome("n1", "online", 12, draw(20, "online", 12)),
				storeOutcome("n1", "kiosk", 12, draw(20, "online", 12)), // a channel never seen
				storeOutcome("s2", "online", 13, draw(w.stores[2], "online", 13)),
				storeOutcome("s5", "shop", 13, draw(w.stores[5]-8, "shop", 13)), // s5 dropped by 8
				storeOutcome("s5", "shop", 14, draw(w.stores[5]-8, "shop", 14)),
				storeOutcome("s4", "online", 12, value(t, w.outcome(4, "online", 12))+5), // replaces a held week
				train[7], // held, unchanged
			}
			asks := []numeric.Key{
				request("n1", "online", "15"), request("n1", "shop", "15"), request("n1", "kiosk", "15"),
				request("s2", "online", "15"), request("s5", "shop", "15"), request("s4", "online", "15"),
				request("s7", "online", "15"), request("n2", "shop", "15"), request("s5", "shop", ""),
			}
			current := &Batch{Requested: asks, Outcomes: shown}
			ev := numeric.Event{Source: "now", Index: 2}
			post := d.Fit.conditioned(b, visibleOutcomes(d, b, current, ev), asks)

			records := append(slices.Clone(d.Records), (&Data{}).records(shown, 2)...)
			exact := refitAt(t, b, observations(b, records), d.Fit)
			full := &Data{Records: records, Bindings: b}
			refit(full)
			for _, p := range asks {
				got := post.forecast(p.Dims)
				want := exact.Predict(b, p.Dims)
				if math.Abs(got.Value-want.Value) > 1e-6*(1+math.Abs(want.Value)) || math.Abs(got.SD-want.SD) > 1e-6*want.SD ||
					got.Support != want.Support {
					t.Errorf("%s: conditioned %.9f ± %.9f (support %d), refit at the same variances %.9f ± %.9f (support %d)",
						p, got.Value, got.SD, got.Support, want.Value, want.SD, want.Support)
				}
				re := full.Fit.Predict(b, p.Dims)
				if math.Abs(got.Value-re.Value) > 0.15*re.SD || math.Abs(got.SD-re.SD) > 0.15*re.SD {
					t.Errorf("%s: conditioned %.3f ± %.3f, full refit %.3f ± %.3f: want within 0.15 sd", p, got.Value, got.SD, re.Value, re.SD)
				}
			}
		})
	}
}

// TestConditionDeterministic: Advise with current outcomes gives the same lines every time
// and for any order of distinct outcomes, and leaves the data as it was.
func TestConditionDeterministic(t *testing.T) {
	w := newWorld(54, 8, 10)
	d := ingest(t, salesBindings, w.panel(1, 10))
	before := mustJSON(t, d)
	shown := []Outcome{
		storeOutcome("n1", "online", 9, 131.4), storeOutcome("n1", "online", 10, 133.9),
		storeOutcome("s1", "shop", 11, 98.25), w.outcome(2, "online", 11), w.outcome(2, "shop", 11),
	}
	asks := []numeric.Key{request("n1", "online", "11"), request("s1", "shop", "12"), request("s2", "online", "12")}
	ev := numeric.Event{Source: "now", Index: 2}
	first := Runtime{}.Advise(d, &salesBindings, &Batch{Requested: asks, Outcomes: shown}, ev)
	rng := rand.New(rand.NewPCG(54, 3))
	for range 5 {
		perm := slices.Clone(shown)
		rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		if adv := (Runtime{}).Advise(d, &salesBindings, &Batch{Requested: asks, Outcomes: perm}, ev); !reflect.DeepEqual(adv, first) {
			t.Fatalf("another order of the outcomes gave other advice:\n%v\nwant\n%v", adv, first)
		}
	}
	if mustJSON(t, d) != before {
		t.Error("Advise changed the data")
	}
	if !strings.Contains(first.Foot, "conditioned on 5 outcomes of the current task") {
		t.Errorf("foot %q does not say the forecasts use the 5 outcomes shown", first.Foot)
	}
	if got := forecasts(t, first, 3); got[0].support != 2 || got[1].support != 21 || got[2].support != 22 {
		t.Errorf("supports %d, %d, %d: want 2, 21 (20 + 1), 22 (20 + 2)", got[0].support, got[1].support, got[2].support)
	}
}

// TestConditionWithoutKey: with no key bound, the current outcomes join the pooled ones: the
// forecast of a positive quantity is the geometric mean of all six.
func TestConditionWithoutKey(t *testing.T) {
	b := Bindings{Target: "latency", Family: Positive}
	var outs []Outcome
	for i, v := range []string{"12.5", "13.1", "11.8", "12.9", "14.2", "13.6"} {
		outs = append(outs, Outcome{Target: "latency", Dims: map[string]string{"run": strconv.Itoa(i)}, Value: numeric.Number(v)})
	}
	d := ingest(t, b, outs[:4])
	adv := Runtime{}.Advise(d, &b, &Batch{Requested: []numeric.Key{{Target: "latency"}}, Outcomes: outs[2:]}, numeric.Event{Index: 2})
	fc := forecasts(t, adv, 1)[0]
	logs := 0.0
	for _, o := range outs {
		logs += math.Log(value(t, o))
	}
	if geo := math.Exp(logs / 6); math.Abs(fc.value-geo) > 0.01 || fc.support != 6 {
		t.Errorf("forecast %.2f (support %d), want the geometric mean of all six %.2f (support 6)", fc.value, fc.support, geo)
	}
}

// TestConditionSingleSeries: a fit of one store cannot say how far stores differ, so a new
// store's visible outcomes give its level unpooled: its mean plus the fitted trend.
func TestConditionSingleSeries(t *testing.T) {
	var outs []Outcome
	for week := 1; week <= 6; week++ {
		outs = append(outs, Outcome{Target: "sales", Dims: map[string]string{"store": "north", "week": fmt.Sprint(week)},
			Value: numeric.Number(fmt.Sprintf("%.1f", 100+2*float64(week)+[]float64{0.4, -0.3, 0.1, -0.5, 0.2, 0.1}[week-1]))})
	}
	d := ingest(t, salesBindings, outs)
	if d.Fit.KeyTerm {
		t.Fatal("one store: a key term was fitted")
	}
	south := []Outcome{
		{Target: "sales", Dims: map[string]string{"store": "south", "week": "5"}, Value: "131.0"},
		{Target: "sales", Dims: map[string]string{"store": "south", "week": "6"}, Value: "133.2"},
	}
	ask := []numeric.Key{{Target: "sales", Dims: map[string]string{"store": "south", "week": "7"}}}
	fc := forecasts(t, Runtime{}.Advise(d, &salesBindings, &Batch{Requested: ask, Outcomes: south}, numeric.Event{Index: 2}), 1)[0]
	// The south mean 132.1 at week 5.5, plus a trend of about 2 a week for 1.5 weeks.
	if math.Abs(fc.value-(132.1+1.5*d.Fit.Beta)) > 0.3 || fc.support != 2 {
		t.Errorf("south: %.2f ± %.2f (support %d), want about %.2f (support 2)", fc.value, fc.sd, fc.support, 132.1+1.5*d.Fit.Beta)
	}
	if fc.sd > 2 {
		t.Errorf("south: sd %.2f, want about sigma sqrt(1 + 1/2), well under 2", fc.sd)
	}
}
