package bench

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// The three simulated worlds of the numeric suite (learn_numeric.go has the formulas). Each is
// drawn once per stream from the stream's generator, then serves its family's tasks in order;
// every value a task shows or scores against comes from the world, so that two tasks showing
// the same point show the same number.

// numericGen draws the tasks of one numeric stream.
type numericGen struct {
	r        *rand.Rand
	sales    *salesWorld
	cohort   *cohortWorld
	spectrum *spectrumWorld
}

func newNumericGen(r *rand.Rand, counts map[string]int) *numericGen {
	return &numericGen{
		r:        r,
		sales:    newSalesWorld(r, counts[FamilySales]),
		cohort:   newCohortWorld(r),
		spectrum: newSpectrumWorld(r, counts[FamilySpectrum]),
	}
}

// task draws the j-th task (from 0) of family f: its source, user message and environment.
func (g *numericGen) task(f string, j int) (source, user string, env NumericEnv, err error) {
	switch f {
	case FamilySales:
		user, env = g.sales.task(g.r, j)
		return FamilySales, user, env, nil
	case FamilyCohort:
		user, env = g.cohort.task(g.r)
		return FamilyCohort, user, env, nil
	case FamilySpectrum:
		site, user, env := g.spectrum.task(g.r, j)
		return FamilySpectrum + "/" + site, user, env, nil
	}
	return "", "", env, fmt.Errorf("generate numeric stream: no generator for family %q", f)
}

// numericMessage joins a task's lines: the title, a note, numericBackground sentences of the
// family's pool, and the rest.
func numericMessage(r *rand.Rand, title, note string, pool []string, lines ...string) string {
	out := []string{title, note}
	for _, i := range r.Perm(len(pool))[:numericBackground] {
		out = append(out, pool[i])
	}
	return strings.Join(append(out, lines...), "\n")
}

// numericBackground is how many sentences of background a numeric task carries.
const numericBackground = 2

// fixed formats x with d decimals.
func fixed(x float64, d int) string { return strconv.FormatFloat(x, 'f', d, 64) }

// round rounds x to d decimals.
func round(x float64, d int) float64 {
	p := math.Pow(10, float64(d))
	return math.Round(x*p) / p
}

// cutNormal draws a standard normal value within ±cut (drawing again beyond it).
func cutNormal(r *rand.Rand, cut float64) float64 {
	for {
		if z := r.NormFloat64(); math.Abs(z) <= cut {
			return z
		}
	}
}

// ---- sales: hierarchical regression ----

// The sales world's constants.
const (
	salesBase      = 120.0 // mean weekly sales of a store
	salesStoreSD   = 15.0  // spread of the stores' levels
	salesRegionSD  = 8.0   // spread of the regions' effects
	salesNoiseSD   = 4.0   // week-to-week noise of one store
	salesNoiseCut  = 2.5   // noise is cut at this many sds
	salesTol       = 3 * salesNoiseSD
	salesFirstWeek = 10 // the earliest week any task shows
	salesSpan      = 26 // weeks over which the family's tasks move forward
	salesTrendLo   = 0.4
	salesTrendHi   = 1.2
)

var (
	storeNames   = []string{"alder", "birch", "cedar", "elm", "fir", "hazel", "larch", "maple", "oak", "pine", "rowan", "willow"}
	salesRegions = []string{"north", "south", "west"}
)

// salesStore is one store: its region and its level (base + region effect + store effect).
type salesStore struct {
	name, region string
	level        float64
}

// salesWorld holds the stores, the trend and every weekly value drawn so far.
type salesWorld struct {
	stores []salesStore
	region map[string]float64
	trend  float64
	values map[[2]string]float64 // (store, week) → realised sales, rounded to one decimal
	asked  map[[2]string]bool    // the points asked for so far
	tasks  int                   // tasks of the family in the stream
}

func newSalesWorld(r *rand.Rand, tasks int) *salesWorld {
	w := &salesWorld{region: map[string]float64{}, values: map[[2]string]float64{}, asked: map[[2]string]bool{}, tasks: max(tasks, 1)}
	for _, reg := range salesRegions {
		w.region[reg] = salesRegionSD * r.NormFloat64()
	}
	names := slices.Clone(storeNames)
	r.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	for i, n := range names {
		reg := salesRegions[i%len(salesRegions)]
		w.stores = append(w.stores, salesStore{name: n, region: reg, level: salesBase + w.region[reg] + salesStoreSD*r.NormFloat64()})
	}
	w.trend = salesTrendLo + (salesTrendHi-salesTrendLo)*r.Float64()
	return w
}

// mean is the expected sales of store s in week: what a forecaster that knew the world's
// parameters would say.
func (w *salesWorld) mean(s salesStore, week int) float64 {
	return s.level + w.trend*float64(week-salesFirstWeek)
}

// value is the realised sales of store s in week, drawn on first use.
func (w *salesWorld) value(r *rand.Rand, s salesStore, week int) float64 {
	k := [2]string{s.name, strconv.Itoa(week)}
	if v, ok := w.values[k]; ok {
		return v
	}
	v := round(w.mean(s, week)+salesNoiseSD*cutNormal(r, salesNoiseCut), 1)
	w.values[k] = v
	return v
}

func salesKey(s salesStore, week int) string {
	return fmt.Sprintf("sales[store=%s,region=%s,week=%d]", s.name, s.region, week)
}

// task: the family's j-th task sits in week W, moving forward through the family; it shows
// the last 2 to 4 weeks of one store and week W of up to two others (in the order of a weekly
// table: by week, then by store), and asks for the store's week W+1. No point is asked twice
// (the feedback of the first would give the answer away).
func (w *salesWorld) task(r *rand.Rand, j int) (string, NumericEnv) {
	week := salesFirstWeek + 3 + j*salesSpan/w.tasks
	si := r.IntN(len(w.stores))
	for k := 0; k < len(w.stores) && w.asked[[2]string{w.stores[si].name, strconv.Itoa(week + 1)}]; k++ {
		si = (si + 1) % len(w.stores)
	}
	s := w.stores[si]
	w.asked[[2]string{s.name, strconv.Itoa(week + 1)}] = true
	type obs struct {
		week  int
		store salesStore
	}
	var shown []obs
	for k := 1 + r.IntN(3); k >= 0; k-- {
		shown = append(shown, obs{week - k, s})
	}
	for _, oi := range r.Perm(len(w.stores))[:r.IntN(3)] {
		if oi != si {
			shown = append(shown, obs{week, w.stores[oi]})
		}
	}
	slices.SortStableFunc(shown, func(a, b obs) int {
		if a.week != b.week {
			return a.week - b.week
		}
		return strings.Compare(a.store.name, b.store.name)
	})
	var lines []string
	for _, o := range shown {
		lines = append(lines, "obs "+salesKey(o.store, o.week)+" = "+fixed(w.value(r, o.store, o.week), 1))
	}
	next := salesKey(s, week+1)
	lines = append(lines, "estimate "+next)
	note := fmt.Sprintf("The %s store (%s region) needs its order plan for week %d.", s.name, s.region, week+1)
	user := numericMessage(r, "Weekly sales forecast", note, salesBackground, lines...)
	env := NumericEnv{Estimate: map[string]EstimateItem{next: {Truth: w.value(r, s, week+1), Tol: salesTol}}}
	return user, env
}

var salesBackground = []string{
	"The figures come from the tills and are final once the week has closed.",
	"Suppliers need the order by Thursday noon to deliver before the weekend.",
	"Overstock goes to the outlet at a loss, and empty shelves cost more than that.",
	"The marketing calendar has no promotion planned for these stores this month.",
	"Head office compares every forecast with the closing figure a week later.",
	"Two of the stores changed their opening hours at the start of the quarter.",
	"The regional managers read the plan on Monday morning.",
	"Weather has been ordinary for the season, with no storms forecast.",
}

// ---- cohort: discrete-event hazards ----

// The cohort world's constants.
const (
	cohortIntervals = 6
	cohortMinSize   = 25  // the smallest cohort a task shows
	cohortMaxSize   = 60  // the largest
	cohortRealized  = 400 // the cohort behind a feedback's realised curve
	cohortTol       = 0.1 // tolerance of the mean absolute error of a curve
	cohortPlanSD    = 0.4 // spread of the plans' effects on the logit scale
	cohortRegionSD  = 0.25
	cohortPairSD    = 0.1 // what a plan and region add beyond their two effects
)

var (
	cohortPlans   = []string{"basic", "plus", "pro"}
	cohortRegions = []string{"north", "south", "east"}
	// cohortBaseline is the monthly churn of a typical key: high in the first month, then
	// settling.
	cohortBaseline = [cohortIntervals]float64{0.12, 0.09, 0.075, 0.065, 0.06, 0.055}
)

// cohortKey is one plan and region with its true monthly hazards.
type cohortKey struct {
	plan, region string
	hazard       [cohortIntervals]float64
}

type cohortWorld struct{ keys []cohortKey }

func newCohortWorld(r *rand.Rand) *cohortWorld {
	plan, region := map[string]float64{}, map[string]float64{}
	for _, p := range cohortPlans {
		plan[p] = cohortPlanSD * r.NormFloat64()
	}
	for _, g := range cohortRegions {
		region[g] = cohortRegionSD * r.NormFloat64()
	}
	w := &cohortWorld{}
	for _, p := range cohortPlans {
		for _, g := range cohortRegions {
			k := cohortKey{plan: p, region: g}
			u := cohortPairSD * r.NormFloat64()
			for j, b := range cohortBaseline {
				k.hazard[j] = logistic(logit(b) + plan[p] + region[g] + u)
			}
			w.keys = append(w.keys, k)
		}
	}
	return w
}

func logit(p float64) float64    { return math.Log(p / (1 - p)) }
func logistic(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// curve is the true event-free curve of k: s_j = the product over i ≤ j of 1 − h_i.
func (k cohortKey) curve() []float64 {
	out := make([]float64, cohortIntervals)
	s := 1.0
	for j, h := range k.hazard {
		s *= 1 - h
		out[j] = s
	}
	return out
}

// follow follows a cohort of n through the intervals: at risk and events per interval, no one
// lost but by the event.
func (k cohortKey) follow(r *rand.Rand, n int) (atRisk, events []int) {
	for _, h := range k.hazard {
		d := 0
		for range n {
			if r.Float64() < h {
				d++
			}
		}
		atRisk, events = append(atRisk, n), append(events, d)
		n -= d
	}
	return atRisk, events
}

// kaplanMeier is the event-free curve of counts: s_j = the product over i ≤ j of 1 − d_i/n_i
// (an interval with no one at risk changes nothing).
func kaplanMeier(atRisk, events []int) []float64 {
	out := make([]float64, len(atRisk))
	s := 1.0
	for j := range atRisk {
		if atRisk[j] > 0 {
			s *= 1 - float64(events[j])/float64(atRisk[j])
		}
		out[j] = s
	}
	return out
}

func roundAll(xs []float64, d int) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = round(x, d)
	}
	return out
}

func cohortKeyText(k cohortKey) string {
	return fmt.Sprintf("churn[plan=%s,region=%s]", k.plan, k.region)
}

// task: one cohort of a random key, its counts per month, and the question for the key's
// curve.
func (w *cohortWorld) task(r *rand.Rand) (string, NumericEnv) {
	k := w.keys[r.IntN(len(w.keys))]
	n := cohortMinSize + r.IntN(cohortMaxSize-cohortMinSize+1)
	atRisk, events := k.follow(r, n)
	key := cohortKeyText(k)
	var lines []string
	for j := range atRisk {
		lines = append(lines, fmt.Sprintf("counts %s interval=%d at_risk=%d events=%d", key, j+1, atRisk[j], events[j]))
	}
	lines = append(lines, fmt.Sprintf("estimate-curve %s over %d", key, cohortIntervals))
	big, bigEvents := k.follow(r, cohortRealized)
	note := fmt.Sprintf("A new cohort of %d subscribers on the %s plan in the %s region, followed month by month since sign-up.", n, k.plan, k.region)
	user := numericMessage(r, "Subscriber churn by cohort", note, cohortBackground, lines...)
	env := NumericEnv{Curve: map[string]CurveItem{key: {
		Truth:    roundAll(k.curve(), 4),
		Realized: roundAll(kaplanMeier(big, bigEvents), 3),
		Tol:      cohortTol,
	}}}
	return user, env
}

var cohortBackground = []string{
	"Finance plans next year's revenue from these retention curves.",
	"A month counts from the day of sign-up; a cancellation ends the subscription at once.",
	"The retention team calls subscribers who look likely to leave.",
	"Prices have not changed since the start of the year.",
	"Small cohorts are noisy, so the planning team prefers a settled view.",
	"The counts exclude test accounts and staff subscriptions.",
	"Support tickets about billing went down after the last app release.",
	"The board asks for the curve of every new cohort at its monthly review.",
}

// ---- spectrum: persistent entities ----

// The spectrum world's constants.
const (
	spectrumLo, spectrumHi = 100.0, 200.0 // the band, in MHz
	spectrumSpacing        = 2.0          // the least distance between two emitters of a site
	spectrumMinEmitters    = 5
	spectrumMaxEmitters    = 7
	spectrumDetect         = 0.75 // chance a sweep detects an emitter
	spectrumPowerSD        = 1.5  // measurement noise on power, dB
	spectrumMaxClutter     = 3    // clutter detections per sweep: 1 to this many
	spectrumTolIdentity    = 0.5  // an answer within this of an emitter's frequency matches it
	spectrumTol            = 3.0  // tolerance of a matched power, dB
	spectrumPerSite        = 6    // the fewest tasks a site gets (fewer sites when short)
	spectrumSites          = 3
)

var (
	siteNames      = []string{"ridge", "harbor", "quarry"}
	bandwidths     = []float64{0.10, 0.15, 0.20, 0.25, 0.30, 0.40}
	spectrumPowers = [2]float64{-75, -35} // emitters' power range, dBm
	clutterPowers  = [2]float64{-80, -55}
)

// emitter is one source of a site: its frequency (MHz), bandwidth (MHz) and power (dBm).
type emitter struct{ freq, bw, power float64 }

type spectrumSite struct {
	name     string
	emitters []emitter
}

type spectrumWorld struct {
	sites []spectrumSite
	tasks int
	sweep map[string]int // sweeps shown so far per site
}

func newSpectrumWorld(r *rand.Rand, tasks int) *spectrumWorld {
	n := min(spectrumSites, max(1, tasks/spectrumPerSite))
	w := &spectrumWorld{tasks: max(tasks, 1), sweep: map[string]int{}}
	for _, name := range siteNames[:n] {
		w.sites = append(w.sites, spectrumSite{name: name, emitters: drawEmitters(r)})
	}
	return w
}

// drawEmitters draws a site's emitters, at least spectrumSpacing apart, sorted by frequency.
func drawEmitters(r *rand.Rand) []emitter {
	n := spectrumMinEmitters + r.IntN(spectrumMaxEmitters-spectrumMinEmitters+1)
	var out []emitter
	for len(out) < n {
		f := round(spectrumLo+1+(spectrumHi-spectrumLo-2)*r.Float64(), 2)
		if slices.ContainsFunc(out, func(e emitter) bool { return math.Abs(e.freq-f) < spectrumSpacing }) {
			continue
		}
		p := round(spectrumPowers[0]+(spectrumPowers[1]-spectrumPowers[0])*r.Float64(), 1)
		out = append(out, emitter{freq: f, bw: bandwidths[r.IntN(len(bandwidths))], power: p})
	}
	slices.SortFunc(out, func(a, b emitter) int { return cmp.Compare(a.freq, b.freq) })
	return out
}

// siteOf is the site of the family's j-th task: the family's tasks in equal runs, one site after
// the other.
func (w *spectrumWorld) siteOf(j int) *spectrumSite {
	return &w.sites[min(j*len(w.sites)/w.tasks, len(w.sites)-1)]
}

// detection is one line of a sweep.
type detection struct{ freq, bw, power float64 }

func (d detection) line() string {
	return "det freq=" + fixed(d.freq, 2) + " bw=" + fixed(d.bw, 2) + " power=" + fixed(d.power, 1)
}

// sweepOf draws one sweep of site: each emitter detected with probability spectrumDetect, its
// frequency uniform over its band and its power with normal noise, then the clutter, in random
// order.
func sweepOf(r *rand.Rand, site *spectrumSite) []detection {
	var out []detection
	for _, e := range site.emitters {
		if r.Float64() >= spectrumDetect {
			continue
		}
		f := e.freq + (r.Float64()-0.5)*e.bw
		out = append(out, detection{round(f, 2), e.bw, round(e.power+spectrumPowerSD*r.NormFloat64(), 1)})
	}
	for range 1 + r.IntN(spectrumMaxClutter) {
		f := round(spectrumLo+(spectrumHi-spectrumLo)*r.Float64(), 2)
		p := round(clutterPowers[0]+(clutterPowers[1]-clutterPowers[0])*r.Float64(), 1)
		out = append(out, detection{f, bandwidths[r.IntN(len(bandwidths))], p})
	}
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// task: one sweep of the site of the family's j-th task, and the question for the emitters'
// powers.
func (w *spectrumWorld) task(r *rand.Rand, j int) (string, string, NumericEnv) {
	site := w.siteOf(j)
	w.sweep[site.name]++
	var lines []string
	for _, d := range sweepOf(r, site) {
		lines = append(lines, d.line())
	}
	lines = append(lines, "estimate-entities power")
	note := fmt.Sprintf("Sweep %d of the %s receiver over %g to %g MHz; each line is one detected signal.", w.sweep[site.name], site.name, spectrumLo, spectrumHi)
	user := numericMessage(r, "Spectrum survey at the "+site.name+" site", note, spectrumBackground, lines...)
	truth := make([][2]float64, len(site.emitters))
	for i, e := range site.emitters {
		truth[i] = [2]float64{e.freq, e.power}
	}
	env := NumericEnv{Entities: &EntitiesItem{Identity: "freq", Field: "power", Truth: truth, TolIdentity: spectrumTolIdentity, Tol: spectrumTol}}
	return site.name, user, env
}

var spectrumBackground = []string{
	"The licence register for this area is out of date, so the survey relies on measurements.",
	"A sweep misses a weak or intermittent signal now and then.",
	"Passing traffic and the receiver's own noise add stray detections.",
	"The antenna mast was serviced last month and points the same way as before.",
	"Bandwidths are read from the receiver's channel filter.",
	"The regulator wants a list of the transmitters that are really there, with their strength.",
	"Every sweep uses the same receiver settings.",
	"Only the strongest signal in a channel is logged.",
}
