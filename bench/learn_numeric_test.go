package bench

import (
	"bytes"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hippocam/hippocam/bench/learnstream"
)

// The numeric streams: deterministic, readable by bench/learnstream, and consistent with the worlds
// they were drawn from.

const numericTestTasks = 150

var numericSeeds = []int64{1, 2, 3}

var (
	obsRe      = regexp.MustCompile(`^obs (sales\[store=([a-z]+),region=([a-z]+),week=(\d+)\]) = (\d+\.\d)$`)
	estimateRe = regexp.MustCompile(`^estimate (sales\[store=([a-z]+),region=([a-z]+),week=(\d+)\])$`)
	countsRe   = regexp.MustCompile(`^counts (churn\[plan=([a-z]+),region=([a-z]+)\]) interval=(\d+) at_risk=(\d+) events=(\d+)$`)
	curveRe    = regexp.MustCompile(`^estimate-curve (churn\[plan=[a-z]+,region=[a-z]+\]) over (\d+)$`)
	detRe      = regexp.MustCompile(`^det freq=(\d+\.\d\d) bw=(\d\.\d\d) power=(-\d+\.\d)$`)
	cohortNote = regexp.MustCompile(`^A new cohort of (\d+) subscribers`)
	siteTitle  = regexp.MustCompile(`^Spectrum survey at the ([a-z]+) site$`)
)

func mustGenerate(t *testing.T, seed int64) ([]NumericTask, *numericGen) {
	t.Helper()
	tasks, g, err := generateNumeric(seed, numericTestTasks)
	if err != nil {
		t.Fatal(err)
	}
	return tasks, g
}

// userLines is a task's user message, line by line; the task must have a system and a user
// message.
func userLines(t *testing.T, task *NumericTask) []string {
	t.Helper()
	if len(task.Messages) != 2 || task.Messages[0].Role != "system" || task.Messages[1].Role != "user" {
		t.Fatalf("%s: want a system and a user message, got %+v", task.ID, task.Messages)
	}
	return strings.Split(task.Messages[1].Content, "\n")
}

func num(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestNumericStreamIsDeterministic(t *testing.T) {
	a, err := LearnStreamData(SuiteNumeric, 7, numericTestTasks)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := LearnStreamData(SuiteNumeric, 7, numericTestTasks)
	if !bytes.Equal(a, b) {
		t.Error("the same seed gave two different streams")
	}
	c, _ := LearnStreamData(SuiteNumeric, 8, numericTestTasks)
	if bytes.Equal(a, c) {
		t.Error("two seeds gave the same stream")
	}
}

// TestNumericStreamReads reads every generated stream back through bench/learnstream: every line
// parses, in order, with the items the generator scored.
func TestNumericStreamReads(t *testing.T) {
	for _, seed := range numericSeeds {
		tasks, _ := mustGenerate(t, seed)
		data, err := WriteNumericStream(tasks)
		if err != nil {
			t.Fatal(err)
		}
		parsed, err := learnstream.Read(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if len(parsed) != numericTestTasks {
			t.Fatalf("seed %d: %d tasks read, want %d", seed, len(parsed), numericTestTasks)
		}
		families := map[string]int{}
		for i := range tasks {
			if parsed[i].ID != tasks[i].ID || parsed[i].Source != tasks[i].Source {
				t.Errorf("task %d reads back as %s/%s, want %s/%s", i, parsed[i].ID, parsed[i].Source, tasks[i].ID, tasks[i].Source)
			}
			if tasks[i].Items() != 1 {
				t.Errorf("%s: %d items, want one", tasks[i].ID, tasks[i].Items())
			}
			if got := parsed[i].Items(); got != tasks[i].Items() {
				t.Errorf("%s: bench/learnstream reads %d items, the generator wrote %d", tasks[i].ID, got, tasks[i].Items())
			}
			families[FamilyOf(tasks[i].Source)]++
		}
		for _, f := range NumericFamilies() {
			if families[f.Source] < numericTestTasks/4 {
				t.Errorf("seed %d: %d tasks of %s in %d", seed, families[f.Source], f.Source, numericTestTasks)
			}
		}
		if len(families) != len(NumericFamilies()) {
			t.Errorf("seed %d: families %v", seed, families)
		}
	}
}

// TestNumericLinesAreKnown: every line of a task is its title, its note, a background sentence
// of its family, or one of the numeric lines of docs/sim.md part 3; nothing reads as advice,
// feedback or a directive; each family keeps one title (spectrum: one per site).
func TestNumericLinesAreKnown(t *testing.T) {
	pools := map[string][]string{FamilySales: salesBackground, FamilyCohort: cohortBackground, FamilySpectrum: spectrumBackground}
	forms := []*regexp.Regexp{obsRe, estimateRe, countsRe, curveRe, detRe, regexp.MustCompile(`^estimate-entities power$`)}
	for _, seed := range numericSeeds {
		tasks, _ := mustGenerate(t, seed)
		titles := map[string]string{} // source → title
		for i := range tasks {
			task := &tasks[i]
			lines := userLines(t, task)
			if old, ok := titles[task.Source]; ok && old != lines[0] {
				t.Errorf("%s: title %q, the source's earlier tasks had %q", task.ID, lines[0], old)
			}
			titles[task.Source] = lines[0]
			for k, l := range lines[1:] {
				known := k == 0 || slices.Contains(pools[FamilyOf(task.Source)], l) || slices.ContainsFunc(forms, func(re *regexp.Regexp) bool { return re.MatchString(l) })
				if !known {
					t.Errorf("%s: line %q is none of the known lines", task.ID, l)
				}
				if k < 1+numericBackground {
					for _, p := range []string{"obs ", "estimate", "counts ", "det ", "feedback:", "forecast ", "curve ", "entity ", "#", "!", "use ", "avoid ", "tags:", "decide "} {
						if strings.HasPrefix(l, p) {
							t.Errorf("%s: prose line %q reads as %q", task.ID, l, p)
						}
					}
				}
			}
		}
		seenTitles := map[string]string{}
		for src, title := range titles {
			if other, dup := seenTitles[title]; dup {
				t.Errorf("seed %d: sources %s and %s share the title %q", seed, src, other, title)
			}
			seenTitles[title] = src
		}
	}
}

// TestNumericSales: the sales family is consistent with its world. A point shows the same
// value everywhere (the truth too) and is asked for only before it was ever shown; the truth is within the tolerance of the world's mean; a
// task shows its store's last weeks up to the week before the question; and a pooled
// estimator fitted to the visible figures alone recovers the trend and forecasts well within
// the tolerance.
func TestNumericSales(t *testing.T) {
	for _, seed := range numericSeeds {
		tasks, g := mustGenerate(t, seed)
		w := g.sales
		stores := map[string]salesStore{}
		for _, s := range w.stores {
			stores[s.name] = s
		}
		seen := map[string]float64{} // key → value
		record := func(id, key string, v float64) {
			if old, ok := seen[key]; ok && old != v {
				t.Errorf("%s: %s = %v, shown as %v before", id, key, v, old)
			}
			seen[key] = v
		}
		type point struct {
			store string
			week  int
		}
		var questions []point
		var truths []float64
		n := 0
		for i := range tasks {
			task := &tasks[i]
			if task.Source != FamilySales {
				continue
			}
			n++
			var shown []string // store@week of every obs line, in order
			for _, l := range userLines(t, task) {
				if m := obsRe.FindStringSubmatch(l); m != nil {
					record(task.ID, m[1], num(t, m[5]))
					if s, ok := stores[m[2]]; !ok || s.region != m[3] {
						t.Errorf("%s: %s names no store of the world", task.ID, m[1])
					}
					shown = append(shown, m[2]+"@"+m[4])
				}
				if m := estimateRe.FindStringSubmatch(l); m != nil {
					item, ok := task.Env.Estimate[m[1]]
					if !ok || len(task.Env.Estimate) != 1 {
						t.Fatalf("%s: env %v has no item for %s", task.ID, task.Env.Estimate, m[1])
					}
					week, _ := strconv.Atoi(m[4])
					s := stores[m[2]]
					if _, shownBefore := seen[m[1]]; shownBefore {
						t.Errorf("%s: %s was shown or asked before", task.ID, m[1])
					}
					record(task.ID, m[1], item.Truth)
					if d := math.Abs(item.Truth - w.mean(s, week)); d > salesNoiseCut*salesNoiseSD+0.05 || d > item.Tol {
						t.Errorf("%s: truth %v is %.2f from the world's mean %.2f (tol %v)", task.ID, item.Truth, d, w.mean(s, week), item.Tol)
					}
					if item.Tol != salesTol {
						t.Errorf("%s: tol %v, want %v", task.ID, item.Tol, salesTol)
					}
					// the store's own weeks: the 2 to 4 before the question, the last of
					// them the latest matching line
					for k := 1; k <= 2; k++ {
						if !slices.Contains(shown, m[2]+"@"+strconv.Itoa(week-k)) {
							t.Errorf("%s: week %d of %s is not shown", task.ID, week-k, m[2])
						}
					}
					if last := lastOf(shown, m[2]); last != m[2]+"@"+strconv.Itoa(week-1) {
						t.Errorf("%s: the store's last line is %s, want week %d", task.ID, last, week-1)
					}
					questions = append(questions, point{m[2], week})
					truths = append(truths, item.Truth)
				}
			}
		}
		if n < numericTestTasks/4 || len(questions) != n {
			t.Fatalf("seed %d: %d sales tasks, %d questions", seed, n, len(questions))
		}
		// the noise: a normal of sd salesNoiseSD cut at 2.5 sd has sd 0.958 · salesNoiseSD
		var res []float64
		for k, v := range w.values {
			week, _ := strconv.Atoi(k[1])
			res = append(res, v-w.mean(stores[k[0]], week))
		}
		if sd := stdDev(res); math.Abs(sd-0.958*salesNoiseSD) > 0.6 {
			t.Errorf("seed %d: noise sd %.2f over %d values, want %.2f ± 0.6", seed, sd, len(res), 0.958*salesNoiseSD)
		}
		// a pooled estimator on the visible figures: per-store levels and one trend
		slope, level := fitStoreTrend(t, tasks)
		if math.Abs(slope-w.trend) > 0.2 {
			t.Errorf("seed %d: the visible figures give a trend of %.3f, the world's is %.3f", seed, slope, w.trend)
		}
		var errs []float64
		for k, q := range questions {
			errs = append(errs, math.Abs(level[q.store]+slope*float64(q.week)-truths[k]))
		}
		if m := mean(errs); m > 0.5*salesTol {
			t.Errorf("seed %d: a pooled fit's forecasts miss by %.2f on average, half the tolerance is %.1f", seed, m, 0.5*salesTol)
		}
	}
}

// lastOf is the last entry of xs for store ("store@week").
func lastOf(xs []string, store string) string {
	for i := len(xs) - 1; i >= 0; i-- {
		if strings.HasPrefix(xs[i], store+"@") {
			return xs[i]
		}
	}
	return ""
}

// fitStoreTrend fits y = level[store] + slope · week by least squares to every distinct point
// the sales tasks show (within-store regression).
func fitStoreTrend(t *testing.T, tasks []NumericTask) (float64, map[string]float64) {
	t.Helper()
	points := map[string][2]float64{} // key → (week, value)
	storeOf := map[string]string{}
	for i := range tasks {
		if tasks[i].Source != FamilySales {
			continue
		}
		for _, l := range userLines(t, &tasks[i]) {
			if m := obsRe.FindStringSubmatch(l); m != nil {
				points[m[1]] = [2]float64{num(t, m[4]), num(t, m[5])}
				storeOf[m[1]] = m[2]
			}
		}
	}
	type acc struct{ n, w, y float64 }
	by := map[string]*acc{}
	for k, p := range points {
		a := by[storeOf[k]]
		if a == nil {
			a = &acc{}
			by[storeOf[k]] = a
		}
		a.n++
		a.w += p[0]
		a.y += p[1]
	}
	var sxy, sxx float64
	for k, p := range points {
		a := by[storeOf[k]]
		dw := p[0] - a.w/a.n
		sxy += dw * (p[1] - a.y/a.n)
		sxx += dw * dw
	}
	slope := sxy / sxx
	level := map[string]float64{}
	for s, a := range by {
		level[s] = a.y/a.n - slope*a.w/a.n
	}
	return slope, level
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func stdDev(xs []float64) float64 {
	m := mean(xs)
	s := 0.0
	for _, x := range xs {
		s += (x - m) * (x - m)
	}
	return math.Sqrt(s / float64(len(xs)-1))
}

func nonIncreasing(xs []float64) bool {
	for i := 1; i < len(xs); i++ {
		if xs[i] > xs[i-1] {
			return false
		}
	}
	return true
}

func meanAbsDiff(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += math.Abs(a[i] - b[i])
	}
	return s / float64(len(a))
}

// TestNumericCohort: the counts follow one cohort without losses, the truth is the world's
// curve, the realised curve is a larger sample's (close to the truth, never equal), both are
// non-increasing, and the counts of every task pooled per key recover the truth.
func TestNumericCohort(t *testing.T) {
	for _, seed := range numericSeeds {
		tasks, g := mustGenerate(t, seed)
		worldCurve := map[string][]float64{}
		for _, k := range g.cohort.keys {
			worldCurve[cohortKeyText(k)] = roundAll(k.curve(), 4)
		}
		pooledN := map[string][]int{}
		pooledD := map[string][]int{}
		cohorts := map[string]int{}
		var realizedErr []float64
		for i := range tasks {
			task := &tasks[i]
			if task.Source != FamilyCohort {
				continue
			}
			lines := userLines(t, task)
			m := cohortNote.FindStringSubmatch(lines[1])
			if m == nil {
				t.Fatalf("%s: note %q does not give the cohort's size", task.ID, lines[1])
			}
			size, _ := strconv.Atoi(m[1])
			if size < cohortMinSize || size > cohortMaxSize {
				t.Errorf("%s: a cohort of %d", task.ID, size)
			}
			var key string
			var atRisk, events []int
			for _, l := range lines {
				if c := countsRe.FindStringSubmatch(l); c != nil {
					key = c[1]
					j, _ := strconv.Atoi(c[4])
					n, _ := strconv.Atoi(c[5])
					d, _ := strconv.Atoi(c[6])
					if j != len(atRisk)+1 {
						t.Errorf("%s: interval %d after %d", task.ID, j, len(atRisk))
					}
					want := size
					if len(atRisk) > 0 {
						want = atRisk[len(atRisk)-1] - events[len(events)-1]
					}
					if n != want || d < 0 || d > n {
						t.Errorf("%s: interval %d at_risk=%d events=%d, want at_risk=%d", task.ID, j, n, d, want)
					}
					atRisk, events = append(atRisk, n), append(events, d)
				}
				if c := curveRe.FindStringSubmatch(l); c != nil && (c[1] != key || c[2] != strconv.Itoa(cohortIntervals)) {
					t.Errorf("%s: %q asks for another key or length than the counts give (%s)", task.ID, l, key)
				}
			}
			item, ok := task.Env.Curve[key]
			if !ok || len(task.Env.Curve) != 1 || len(atRisk) != cohortIntervals {
				t.Fatalf("%s: env %v, counts for %q over %d intervals", task.ID, task.Env.Curve, key, len(atRisk))
			}
			if !slices.Equal(item.Truth, worldCurve[key]) {
				t.Errorf("%s: truth %v, the world's curve is %v", task.ID, item.Truth, worldCurve[key])
			}
			for _, c := range [][]float64{item.Truth, item.Realized} {
				if len(c) != cohortIntervals || !nonIncreasing(c) || c[0] > 1 || c[len(c)-1] < 0 {
					t.Errorf("%s: curve %v is not an event-free curve over %d intervals", task.ID, c, cohortIntervals)
				}
			}
			if slices.Equal(item.Truth, item.Realized) {
				t.Errorf("%s: the realised curve is the truth", task.ID)
			}
			e := meanAbsDiff(item.Truth, item.Realized)
			if e > item.Tol || item.Tol != cohortTol {
				t.Errorf("%s: realised %v is %.3f from the truth (tol %v)", task.ID, item.Realized, e, item.Tol)
			}
			realizedErr = append(realizedErr, e)
			if pooledN[key] == nil {
				pooledN[key], pooledD[key] = make([]int, cohortIntervals), make([]int, cohortIntervals)
			}
			for j := range atRisk {
				pooledN[key][j] += atRisk[j]
				pooledD[key][j] += events[j]
			}
			cohorts[key]++
		}
		// a sample of 400 misses the truth by about 0.015 on average
		if m := mean(realizedErr); m > 0.03 {
			t.Errorf("seed %d: realised curves miss the truth by %.3f on average", seed, m)
		}
		// pooled per key, the counts recover the truth: each key within 4 standard errors
		// (that of a proportion at the curve's end, with the key's first-interval total), and
		// all keys together within 0.04 on average
		var pooledErr []float64
		for key, n := range pooledN {
			truth := worldCurve[key]
			e := meanAbsDiff(kaplanMeier(n, pooledD[key]), truth)
			end := truth[len(truth)-1]
			if se := math.Sqrt(end * (1 - end) / float64(n[0])); e > 4*se {
				t.Errorf("seed %d: the pooled counts of %s (%d cohorts) give a curve %.3f from the truth, 4 se = %.3f", seed, key, cohorts[key], e, 4*se)
			}
			pooledErr = append(pooledErr, e)
		}
		if m := mean(pooledErr); m > 0.04 {
			t.Errorf("seed %d: pooled curves miss the truth by %.3f on average", seed, m)
		}
		if len(cohorts) < len(g.cohort.keys)-1 {
			t.Errorf("seed %d: %d of %d keys asked", seed, len(cohorts), len(g.cohort.keys))
		}
	}
}

// TestNumericSpectrum: a site is a run of the family's tasks with its own title and source; the
// truth is the site's emitters; each detection is an emitter's (within half its bandwidth, the
// same bandwidth) or clutter; detection and clutter rates are as documented; and the mean of an
// emitter's detections converges on it.
func TestNumericSpectrum(t *testing.T) {
	for _, seed := range numericSeeds {
		tasks, g := mustGenerate(t, seed)
		w := g.spectrum
		if len(w.sites) != spectrumSites {
			t.Fatalf("seed %d: %d sites, want %d", seed, len(w.sites), spectrumSites)
		}
		sites := map[string]*spectrumSite{}
		for i := range w.sites {
			s := &w.sites[i]
			sites[s.name] = s
			for a := range s.emitters {
				for b := a + 1; b < len(s.emitters); b++ {
					if math.Abs(s.emitters[a].freq-s.emitters[b].freq) < spectrumSpacing {
						t.Errorf("seed %d: %s has emitters %v and %v closer than %v", seed, s.name, s.emitters[a], s.emitters[b], spectrumSpacing)
					}
				}
			}
		}
		type acc struct {
			n           int
			freq, power float64
		}
		seen := map[[2]string]*acc{} // (site, emitter freq) → its detections
		var order []string
		sweeps, detected, possible := 0, 0, 0
		for i := range tasks {
			task := &tasks[i]
			if FamilyOf(task.Source) != FamilySpectrum {
				continue
			}
			lines := userLines(t, task)
			m := siteTitle.FindStringSubmatch(lines[0])
			if m == nil || task.Source != FamilySpectrum+"/"+m[1] || sites[m[1]] == nil {
				t.Fatalf("%s: title %q, source %q", task.ID, lines[0], task.Source)
			}
			site := sites[m[1]]
			if len(order) == 0 || order[len(order)-1] != site.name {
				if slices.Contains(order, site.name) {
					t.Errorf("%s: site %s comes back after another", task.ID, site.name)
				}
				order = append(order, site.name)
			}
			ent := task.Env.Entities
			if ent == nil || ent.Identity != "freq" || ent.Field != "power" || ent.TolIdentity != spectrumTolIdentity || ent.Tol != spectrumTol {
				t.Fatalf("%s: entities env %+v", task.ID, ent)
			}
			var want [][2]float64
			for _, e := range site.emitters {
				want = append(want, [2]float64{e.freq, e.power})
			}
			if !slices.Equal(ent.Truth, want) {
				t.Errorf("%s: truth %v, the site's emitters are %v", task.ID, ent.Truth, want)
			}
			sweeps++
			possible += len(site.emitters)
			clutter := 0
			hits := map[float64]int{}
			for _, l := range lines {
				d := detRe.FindStringSubmatch(l)
				if d == nil {
					continue
				}
				f, bw, p := num(t, d[1]), num(t, d[2]), num(t, d[3])
				k := slices.IndexFunc(site.emitters, func(e emitter) bool { return e.bw == bw && math.Abs(f-e.freq) <= bw/2+0.006 })
				if k < 0 {
					clutter++
					if p < clutterPowers[0] || p > clutterPowers[1] {
						t.Errorf("%s: clutter %q outside the clutter's power range", task.ID, l)
					}
					continue
				}
				e := site.emitters[k]
				hits[e.freq]++
				if math.Abs(p-e.power) > 5*spectrumPowerSD {
					t.Errorf("%s: %q is %.1f dB from its emitter's %v", task.ID, l, p-e.power, e.power)
				}
				a := seen[[2]string{site.name, fixed(e.freq, 2)}]
				if a == nil {
					a = &acc{}
					seen[[2]string{site.name, fixed(e.freq, 2)}] = a
				}
				a.n++
				a.freq += f
				a.power += p
			}
			for f, n := range hits {
				if n > 1 {
					t.Errorf("%s: the emitter at %v is detected %d times", task.ID, f, n)
				}
				detected += n
			}
			if clutter < 1 || clutter > spectrumMaxClutter {
				t.Errorf("%s: %d clutter detections, want 1 to %d", task.ID, clutter, spectrumMaxClutter)
			}
		}
		if len(order) != spectrumSites {
			t.Errorf("seed %d: sites in the order %v", seed, order)
		}
		if rate := float64(detected) / float64(possible); math.Abs(rate-spectrumDetect) > 0.07 {
			t.Errorf("seed %d: detection rate %.3f over %d sweeps, want %.2f", seed, rate, sweeps, spectrumDetect)
		}
		for _, s := range w.sites {
			for _, e := range s.emitters {
				a := seen[[2]string{s.name, fixed(e.freq, 2)}]
				if a == nil || a.n < 5 {
					continue
				}
				k := float64(a.n)
				if d := math.Abs(a.power/k - e.power); d > 3*spectrumPowerSD/math.Sqrt(k)+0.05 {
					t.Errorf("seed %d: %s emitter %v: mean power of %d detections is %.2f off", seed, s.name, e, a.n, d)
				}
				if d := math.Abs(a.freq/k - e.freq); d > 3*e.bw/math.Sqrt(12*k)+0.006 {
					t.Errorf("seed %d: %s emitter %v: mean frequency of %d detections is %.3f off", seed, s.name, e, a.n, d)
				}
			}
		}
	}
}

func TestNumericStreamTooShort(t *testing.T) {
	if _, err := GenerateNumericStream(1, 5); err == nil {
		t.Error("a stream of 5 tasks was generated for three families that each need two")
	}
	tasks, err := GenerateNumericStream(1, 6)
	if err != nil {
		t.Fatal(err)
	}
	fams := map[string]int{}
	for i := range tasks {
		fams[FamilyOf(tasks[i].Source)]++
	}
	for _, f := range NumericFamilies() {
		if fams[f.Source] != 2 {
			t.Errorf("6 tasks: %d of %s, want 2", fams[f.Source], f.Source)
		}
	}
}

func TestLearnStreamData(t *testing.T) {
	if _, err := LearnStreamData("poetry", 1, 40); err == nil || !strings.Contains(err.Error(), "poetry") {
		t.Errorf("unknown suite: %v", err)
	}
	got, err := LearnStreamData(SuiteDecisions, 4, 40)
	if err != nil {
		t.Fatal(err)
	}
	tasks, _ := GenerateStream(4, 40)
	want, _ := WriteStream(tasks)
	if !bytes.Equal(got, want) {
		t.Error("the decision suite's data is not GenerateStream's")
	}
}

// TestNumericTestdata: the numeric example of bench/learnstream is this generator's stream, so that
// it stays in step with the generator. Regenerate it with
//
//	go run ./cmd/hippocam bench learn --suite numeric --seed 1 --tasks 150 --write-stream bench/learnstream/testdata/numeric.jsonl
func TestNumericTestdata(t *testing.T) {
	got, err := os.ReadFile("learnstream/testdata/numeric.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	want, err := LearnStreamData(SuiteNumeric, 1, 150)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("bench/learnstream/testdata/numeric.jsonl is not the generator's stream of seed 1 and 150 tasks; regenerate it (see the test's doc)")
	}
}
