package hazard

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hippocam/hippocam/memory/numeric"
)

// world is a simulated population: logit h[k,j] = alpha_j + plan effect + region effect.
type world struct {
	alpha  []float64
	plan   map[string]float64
	region map[string]float64
}

func testWorld() world {
	hs := []float64{0.12, 0.10, 0.08, 0.07, 0.06, 0.05}
	alpha := make([]float64, len(hs))
	for i, h := range hs {
		alpha[i] = logit(h)
	}
	return world{alpha: alpha,
		plan:   map[string]float64{"basic": 0.5, "plus": 0, "pro": -0.6},
		region: map[string]float64{"north": 0.3, "south": -0.3}}
}

func (w world) hazard(plan, region string, j int) float64 {
	return sigmoid(w.alpha[j] + w.plan[plan] + w.region[region])
}

// truth is the true event-free curve of a key.
func (w world) truth(plan, region string) []float64 {
	out := make([]float64, len(w.alpha))
	s := 1.0
	for j := range w.alpha {
		s *= 1 - w.hazard(plan, region, j)
		out[j] = s
	}
	return out
}

// cohort follows n at risk through every interval: at risk and events per interval.
func (w world) cohort(rng *rand.Rand, plan, region string, n int) (atRisk, events []int) {
	for j := range w.alpha {
		d := 0
		h := w.hazard(plan, region, j)
		for range n {
			if rng.Float64() < h {
				d++
			}
		}
		atRisk = append(atRisk, n)
		events = append(events, d)
		n -= d
	}
	return atRisk, events
}

func num(v int) numeric.Number { return numeric.Number(strconv.Itoa(v)) }

func dims(plan, region string) map[string]string {
	d := map[string]string{}
	if plan != "" {
		d["plan"] = plan
	}
	if region != "" {
		d["region"] = region
	}
	return d
}

// countBatch is the counts of one cohort.
func countBatch(plan, region string, atRisk, events []int) *Batch {
	x := &Batch{}
	for j := range atRisk {
		x.Counts = append(x.Counts, Count{Target: "churn", Dims: dims(plan, region), Interval: num(j + 1), AtRisk: num(atRisk[j]), Events: num(events[j])})
	}
	return x
}

// kaplanMeier is s_j = prod_{i<=j} (1 - d_i/n_i).
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

func meanAbs(a, b []float64) float64 {
	var t float64
	for i := range a {
		t += math.Abs(a[i] - b[i])
	}
	return t / float64(len(a))
}

func bindings(j int) *Bindings {
	return &Bindings{Target: "churn", Entity: []string{"plan", "region"}, Intervals: j}
}

func ingest(d *Data, b *Bindings, x *Batch, source string, index int) {
	Runtime{}.Ingest(d, b, x, numeric.Event{Source: source, Index: index})
}

func assertMonotone(t *testing.T, s []float64) {
	t.Helper()
	prev := 1.0
	for i, v := range s {
		if math.IsNaN(v) || v < 0 || v > prev {
			t.Fatalf("curve %v: value %d (%v) is not in [0, previous]", s, i+1, v)
		}
		prev = v
	}
}

func format(s []float64) string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = fmt.Sprintf("%.3f", v)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// clone copies d so that ingesting into the copy leaves d alone.
func clone(d *Data) *Data {
	return &Data{Intervals: d.Intervals, Records: slices.Clone(d.Records), Fit: d.Fit}
}
