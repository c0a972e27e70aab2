package hazard

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hippocam/hippocam/memory/numeric"
)

// advisedCurve is the curve Advise renders for one requested key given the current batch x
// (requests are added for the key), read back as the simulated agent reads it, and its
// support.
func advisedCurve(t *testing.T, d *Data, b *Bindings, x *Batch, ev numeric.Event, plan, region string) ([]float64, int) {
	t.Helper()
	cur := &Batch{Requested: []Request{{Target: "churn", Dims: dims(plan, region), Intervals: num(b.Intervals)}}, Counts: x.Counts, Curves: x.Curves}
	a := Runtime{}.Advise(d, b, cur, ev)
	if len(a.Lines) != 1 {
		t.Fatalf("lines %q, want one curve", a.Lines)
	}
	m := curveLineRE.FindStringSubmatch(a.Lines[0])
	if m == nil {
		t.Fatalf("line %q is not `curve KEY = [s1, …] (support K)`", a.Lines[0])
	}
	var s []float64
	for v := range strings.SplitSeq(m[2], ", ") {
		f, _ := strconv.ParseFloat(v, 64)
		s = append(s, f)
	}
	k, _ := strconv.Atoi(m[3])
	return s, k
}

// raisedCohort is a cohort of n followed through the intervals whose hazards are those of the
// curve s raised by shift on the logit scale, with the expected number of events (rounded) in
// each interval: a cohort that clearly does worse than s says, without sampling noise.
func raisedCohort(s []float64, shift float64, n int) (atRisk, events []int) {
	prev := 1.0
	for _, v := range s {
		h := sigmoid(logit(1-v/prev) + shift)
		e := int(math.Round(float64(n) * h))
		atRisk, events = append(atRisk, n), append(events, e)
		n -= e
		prev = v
	}
	return atRisk, events
}

// TestConditionBetween: a requested key whose current cohort has hazards clearly above what
// the fit says (logit + 1 in every interval) gets a curve between the pooled one and the
// cohort's Kaplan–Meier curve in every interval, closer to the Kaplan–Meier curve the larger the
// cohort, with the cohort's first at-risk count added to its support. This holds for a seen key
// and for a key never seen (its u starts at 0). Advise leaves the data unchanged and gives the
// same lines twice.
func TestConditionBetween(t *testing.T) {
	d, b := simulated(t, 5)
	for _, k := range [][2]string{{"basic", "north"}, {"gold", "east"}} {
		ek := entityKey(dims(k[0], k[1]))
		pooled := d.Fit.Curve(dims(k[0], k[1]), nil, 6)
		prevDist := math.Inf(1)
		for _, n := range []int{25, 100, 400} {
			atRisk, events := raisedCohort(pooled, 1, n)
			km := kaplanMeier(atRisk, events)
			before, _ := json.Marshal(d)
			x := countBatch(k[0], k[1], atRisk, events)
			ev := numeric.Event{Source: "now", Index: 30}
			got, support := advisedCurve(t, d, b, x, ev, k[0], k[1])
			again, _ := advisedCurve(t, d, b, x, ev, k[0], k[1])
			if after, _ := json.Marshal(d); string(after) != string(before) {
				t.Fatalf("%s: Advise changed the data", ek)
			}
			if !reflect.DeepEqual(got, again) {
				t.Fatalf("%s: two Advise calls differ: %v and %v", ek, got, again)
			}
			dist := meanAbs(got, km)
			t.Logf("%s, cohort %d: pooled %s conditioned %s Kaplan–Meier %s; distance to KM %.4f (pooled's %.4f)",
				ek, n, format(pooled), format(got), format(km), dist, meanAbs(pooled, km))
			// 0.001: the three decimals of the line and the rounding of the cohort's events.
			for j := range got {
				if got[j] > pooled[j]+0.001 || got[j] < km[j]-0.001 {
					t.Errorf("%s, cohort %d, interval %d: %.3f is not between the pooled %.4f and the Kaplan–Meier %.4f", ek, n, j+1, got[j], pooled[j], km[j])
				}
			}
			// A cohort of 25 against the 250 a seen key holds moves it about a tenth of the way.
			if dist >= 0.97*meanAbs(pooled, km) || dist >= prevDist {
				t.Errorf("%s, cohort %d: distance to the Kaplan–Meier curve %.4f; want under 0.97 of the pooled one's (%.4f) and under the smaller cohort's (%.4f)",
					ek, n, dist, meanAbs(pooled, km), prevDist)
			}
			prevDist = dist
			if want := int(math.Round(d.Fit.Support[ek])) + n; support != want {
				t.Errorf("%s, cohort %d: support %d, want %d (the stored %v and the cohort's %d)", ek, n, support, want, d.Fit.Support[ek], n)
			}
		}
	}
}

// TestConditionHeld: counts the data already holds for the current event (same source, key,
// context and interval) change nothing, while the same counts from another source do; a held
// count whose value differs replaces the held one. Counts only of keys not requested change
// nothing either.
func TestConditionHeld(t *testing.T) {
	d, b := simulated(t, 3)
	atRisk, events := raisedCohort(d.Fit.Curve(dims("pro", "south"), nil, 6), 1.5, 60)
	x := countBatch("pro", "south", atRisk, events)
	ingest(d, b, x, "now", len(d.Records))
	pooled, support := advisedCurve(t, d, b, &Batch{}, numeric.Event{Source: "now", Index: 40}, "pro", "south")

	held, heldSupport := advisedCurve(t, d, b, x, numeric.Event{Source: "now", Index: 40}, "pro", "south")
	if !reflect.DeepEqual(held, pooled) || heldSupport != support {
		t.Errorf("counts the data holds changed the curve: %v (support %d), without them %v (support %d)", held, heldSupport, pooled, support)
	}
	other, otherSupport := advisedCurve(t, d, b, x, numeric.Event{Source: "other", Index: 40}, "pro", "south")
	if reflect.DeepEqual(other, pooled) || otherSupport != support+60 {
		t.Errorf("the same counts from another task: %v (support %d); want a curve other than %v, support %d", other, otherSupport, pooled, support+60)
	}
	unrequested := countBatch("basic", "north", atRisk, events)
	if got, k := advisedCurve(t, d, b, unrequested, numeric.Event{Source: "other", Index: 40}, "pro", "south"); !reflect.DeepEqual(got, pooled) || k != support {
		t.Errorf("counts of another key changed the curve: %v (support %d), want %v (support %d)", got, k, pooled, support)
	}

	// The first interval now shows no events: the held count is replaced, and the curve rises.
	changed := countBatch("pro", "south", atRisk, events)
	changed.Counts[0].Events = "0"
	got, k := advisedCurve(t, d, b, changed, numeric.Event{Source: "now", Index: 40}, "pro", "south")
	if got[0] <= pooled[0] || k != support {
		t.Errorf("a held count with fewer events: %v (support %d); want s1 above %v, support %d", got, k, pooled[0], support)
	}
}

// TestConditionExact: the conditioned curve is the one-dimensional MAP it claims to be: at the
// key's re-estimated u, with every other parameter at its fitted value, the derivative of the
// log posterior of the stored records and the current counts in u is 0. The root is found here
// by bisection on the fit's own gradient, independently of Advise's Newton steps, for a seen
// key (a context in the records) and a key never seen.
func TestConditionExact(t *testing.T) {
	d, _ := simulated(t, 2)
	b := &Bindings{Target: "churn", Entity: []string{"plan", "region"}, Contexts: []string{"site"}, Intervals: 6}
	rng := rand.New(rand.NewPCG(21, 22))
	w := testWorld()
	site := countBatch("pro", "north", []int{40, 36}, []int{9, 2})
	for i := range site.Counts {
		site.Counts[i].Dims["site"] = "east"
	}
	ingest(d, b, site, "site", len(d.Records))
	for _, k := range [][2]string{{"pro", "north"}, {"gold", "south"}} {
		n, e := w.cohort(rng, "basic", "north", 45) // a cohort that does worse than either key
		x := countBatch(k[0], k[1], n, e)
		x.Counts[2].Dims["site"] = "east"
		ev := numeric.Event{Source: "now", Index: 50}
		got, _ := advisedCurve(t, d, b, x, ev, k[0], k[1])

		all := clone(d)
		for _, c := range x.Counts {
			r, _ := countRecord(b, c, ev)
			all.Records = append(all.Records, r)
		}
		p := layout(all.Records, 6)
		// The fitted point in the layout of all records: a key, feature (plan=gold) or context
		// the fit never saw is at 0, as in Advise.
		at := fitted(p, d.Fit)
		ui := p.j + len(p.features) + slices.Index(p.entities, entityKey(dims(k[0], k[1])))
		grad := make([]float64, len(at))
		dU := func(u float64) float64 {
			at[ui] = u
			p.gradient(grad, at)
			return grad[ui]
		}
		lo, hi := -10.0, 10.0
		for range 200 {
			if mid := (lo + hi) / 2; dU(mid) > 0 {
				hi = mid
			} else {
				lo = mid
			}
		}
		f := *d.Fit
		f.Entities = map[string]float64{entityKey(dims(k[0], k[1])): (lo + hi) / 2}
		want := f.Curve(dims(k[0], k[1]), nil, 6)
		t.Logf("%s: advised %s, the MAP of u (%.4f, fitted %.4f) gives %s", k, format(got), (lo+hi)/2, d.Fit.Entities[entityKey(dims(k[0], k[1]))], format(want))
		if e := maxAbs(got, want); e > 0.0005+1e-9 {
			t.Errorf("%s: advised %s, the one-dimensional MAP gives %s (max diff %.4f > the rounding 0.0005)", k, format(got), format(want), e)
		}
	}
}

// TestConditionRefit: on simulated data, the conditioned curve of a key with little stored
// evidence of its own is close to a full refit with the current cohort ingested: within 0.004
// mean absolute (and 0.006 in any interval) over 10 draws, where the pooled curve is further.
// The key's true hazards sit 0.7 above what its features say (a pair effect), so its own
// cohort matters.
func TestConditionRefit(t *testing.T) {
	w := testWorld()
	pair := w
	pair.alpha = make([]float64, len(w.alpha))
	for j, a := range w.alpha {
		pair.alpha[j] = a + 0.7
	}
	b := bindings(6)
	var worst, pooledGap float64
	for seed := range uint64(10) {
		rng := rand.New(rand.NewPCG(100+seed, 7))
		d := &Data{}
		for c := range 5 {
			for _, p := range plans {
				for _, r := range regions {
					if p == "pro" && r == "south" && c > 0 {
						continue // one cohort only
					}
					ww := w
					if p == "pro" && r == "south" {
						ww = pair
					}
					n, e := ww.cohort(rng, p, r, 50)
					ingest(d, b, countBatch(p, r, n, e), "t"+strconv.Itoa(c)+p+r, len(d.Records))
				}
			}
		}
		n, e := pair.cohort(rng, "pro", "south", 60)
		x := countBatch("pro", "south", n, e)
		ev := numeric.Event{Source: "now", Index: 99}
		got, _ := advisedCurve(t, d, b, x, ev, "pro", "south")
		refit := clone(d)
		Runtime{}.Ingest(refit, b, x, ev)
		want := refit.Fit.Curve(dims("pro", "south"), nil, 6)
		pooled := d.Fit.Curve(dims("pro", "south"), nil, 6)
		mean, most := meanAbs(got, want), maxAbs(got, want)
		worst, pooledGap = max(worst, mean), pooledGap+meanAbs(pooled, want)/10
		t.Logf("seed %d: conditioned %s refit %s pooled %s: mean %.4f max %.4f (pooled's mean %.4f)",
			seed, format(got), format(want), format(pooled), mean, most, meanAbs(pooled, want))
		if mean > 0.004 || most > 0.006 {
			t.Errorf("seed %d: the conditioned curve is %.4f (mean) and %.4f (max) from the refit's", seed, mean, most)
		}
	}
	t.Logf("worst mean distance to the refit %.4f; the pooled curve's mean distance %.4f", worst, pooledGap)
	if pooledGap < 2*worst {
		t.Errorf("the pooled curve is %.4f from the refit, not clearly further than the conditioned %.4f", pooledGap, worst)
	}
}
