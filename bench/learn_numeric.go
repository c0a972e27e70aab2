package bench

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// The numeric suite of `hippocam bench learn` (docs/sim.md part 3): streams whose tasks ask for
// numbers rather than decisions. Three families, each a small simulated world with known
// parameters, interleaved at random like the decision families:
//
//   - sales (regression): weekly sales per store. A store's week w is
//     y = base + region[r] + store[s] + trend·(w − w0) + e, with store levels of sd 15, region
//     effects of sd 8, a trend drawn once per stream, and noise e of sd 4 (cut at 2.5 sd). A task
//     shows the last few weeks of one store (and sometimes of a few others) and asks for the
//     next week. The truth is that week's realised value; the tolerance is three noise sds.
//   - cohort (hazard): churn of subscriber cohorts over J = 6 months, per plan and region. The
//     monthly hazard is logit h = a_j + plan[p] + region[r] + u[p,r]. A task shows one small
//     cohort's counts (25 to 60 subscribers) and asks for the retention curve of its key; the
//     truth is the true curve, and the feedback shows the Kaplan–Meier curve of a cohort of 400
//     (realised, never the truth itself).
//   - spectrum (entities): radio emitters at a few survey sites. Each site holds a fixed set of
//     emitters (frequency, bandwidth, power); a sweep detects each with probability 0.75, its
//     frequency spread uniformly over its bandwidth and its power with noise of sd 1.5 dB, and
//     adds one to three clutter detections. A task shows one sweep and asks for the emitters'
//     powers; the truth is the site's emitters.
//
// Each family keeps one title (spectrum: one per site), so a router can keep it in one cluster.
// A site is a hidden source of its own ("spectrum/ridge"): its family is the part before the
// slash. The same seed gives the same bytes.

// The suites of `hippocam bench learn`.
const (
	SuiteDecisions = "decisions" // the decision and fact families (learn_stream.go)
	SuiteNumeric   = "numeric"   // the numeric families (this file)
)

// LearnSuites lists the suites, the default first.
func LearnSuites() []string { return []string{SuiteDecisions, SuiteNumeric} }

// The families of a numeric stream, by family name (a spectrum task's source adds its site).
const (
	FamilySales    = "sales"    // regression: next week's sales of a store
	FamilyCohort   = "cohort"   // hazard: the retention curve of a plan and region
	FamilySpectrum = "spectrum" // entities: the emitters present at a survey site
)

// NumericFamilies lists the families of every numeric stream, in report order.
func NumericFamilies() []LearnFamily {
	return []LearnFamily{
		{FamilySales, "regression: next week's sales of a store, a few recent weeks visible", 1},
		{FamilyCohort, "hazard: a retention curve from one small cohort's counts", 1},
		{FamilySpectrum, "entities: the emitters of a site from one noisy sweep", 1},
	}
}

// NumericConditions are the conditions the numeric suite runs by default: the ones its targets
// compare (lessons and best-of-n have nothing to work on without decisions).
var NumericConditions = []string{"stateless", "global-icl", "routed-icl", "routed-cl", "ground-truth"}

// FamilyOf is the family of a hidden source: the part before a slash, the whole source when
// there is none.
func FamilyOf(source string) string {
	f, _, _ := strings.Cut(source, "/")
	return f
}

// NumericTask is one line of a numeric stream: as StreamTask, with a numeric environment.
type NumericTask struct {
	ID       string          `json:"id"`
	Source   string          `json:"source"`
	Messages []StreamMessage `json:"messages"`
	Env      NumericEnv      `json:"env"`
}

// NumericEnv scores a numeric task (docs/sim.md part 3): point estimates, curves and entities.
type NumericEnv struct {
	Estimate map[string]EstimateItem `json:"estimate,omitempty"`
	Curve    map[string]CurveItem    `json:"curve,omitempty"`
	Entities *EntitiesItem           `json:"entities,omitempty"`
}

// EstimateItem is one `estimate KEY`: the true value and the tolerance of the reward
// max(0, 1 − |x − truth| / tol).
type EstimateItem struct {
	Truth float64 `json:"truth"`
	Tol   float64 `json:"tol"`
}

// CurveItem is one `estimate-curve KEY over J`: the true event-free curve (what the answer is
// scored against), the realised curve of a larger sample (what the feedback shows) and the
// tolerance of the mean absolute error.
type CurveItem struct {
	Truth    []float64 `json:"truth"`
	Realized []float64 `json:"realized"`
	Tol      float64   `json:"tol"`
}

// EntitiesItem is one `estimate-entities FIELD`: the entities present, each as [identity,
// value], the identity tolerance within which an answer matches one, and the value tolerance.
type EntitiesItem struct {
	Identity    string       `json:"identity"`
	Field       string       `json:"field"`
	Truth       [][2]float64 `json:"truth"`
	TolIdentity float64      `json:"tol_identity"`
	Tol         float64      `json:"tol"`
}

// Items counts what the task scores.
func (t *NumericTask) Items() int {
	n := len(t.Env.Estimate) + len(t.Env.Curve)
	if t.Env.Entities != nil {
		n++
	}
	return n
}

// Scored reports whether the task has an item the runner scores.
func (t *NumericTask) Scored() bool { return t.Items() > 0 }

// numericSystem is the system message every numeric task starts with.
const numericSystem = "You are an analyst for a group that runs shops, a subscription service and radio " +
	"monitoring sites. Read the figures of the request and answer each estimate on a line of its own, " +
	"in the form the request asks for."

// GenerateNumericStream draws a numeric stream of n tasks from seed: the families interleaved at
// random in equal shares, each present at least twice. It fails for n too small to hold every
// family twice.
func GenerateNumericStream(seed int64, n int) ([]NumericTask, error) {
	tasks, _, err := generateNumeric(seed, n)
	return tasks, err
}

// generateNumeric is GenerateNumericStream, with the worlds the tasks were drawn from.
func generateNumeric(seed int64, n int) ([]NumericTask, *numericGen, error) {
	fams := NumericFamilies()
	if n < 2*len(fams) {
		return nil, nil, fmt.Errorf("generate numeric stream: %d tasks cannot hold %d families twice", n, len(fams))
	}
	r := rand.New(rand.NewPCG(uint64(seed), 0x6e756d65726963))
	order := schedule(r, fams, n)
	counts := map[string]int{}
	for _, f := range order {
		counts[f]++
	}
	g := newNumericGen(r, counts)
	seen := map[string]int{}
	tasks := make([]NumericTask, 0, n)
	for i, f := range order {
		j := seen[f]
		seen[f]++
		source, user, env, err := g.task(f, j)
		if err != nil {
			return nil, nil, err
		}
		tasks = append(tasks, NumericTask{
			ID:     fmt.Sprintf("n%d-t%03d", seed, i+1),
			Source: source,
			Messages: []StreamMessage{
				{Role: "system", Content: numericSystem},
				{Role: "user", Content: user},
			},
			Env: env,
		})
	}
	return tasks, g, nil
}

// WriteNumericStream writes tasks as JSON Lines.
func WriteNumericStream(tasks []NumericTask) ([]byte, error) {
	return jsonLines(tasks, func(t *NumericTask) string { return t.ID })
}

// LearnStreamData generates the stream of suite from seed with n tasks and returns it as the
// JSON Lines `hippocam learn --stream` reads. An unknown suite or too few tasks is an error.
func LearnStreamData(suite string, seed int64, n int) ([]byte, error) {
	switch suite {
	case SuiteDecisions, "":
		tasks, err := GenerateStream(seed, n)
		if err != nil {
			return nil, err
		}
		return WriteStream(tasks)
	case SuiteNumeric:
		tasks, err := GenerateNumericStream(seed, n)
		if err != nil {
			return nil, err
		}
		return WriteNumericStream(tasks)
	}
	return nil, fmt.Errorf("unknown suite %q (%s)", suite, strings.Join(LearnSuites(), ", "))
}

// suiteFamilies lists the families of suite's streams.
func suiteFamilies(suite string) []LearnFamily {
	if suite == SuiteNumeric {
		return NumericFamilies()
	}
	return LearnFamilies()
}
