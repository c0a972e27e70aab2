package regression

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/hippocam/hippocam/memory/numeric"
)

// minObservations is how many distinct observations a cluster needs before it forecasts.
const minObservations = 2

// Forecast is the fit's answer for one point: the value on the outcome scale, its predictive
// sd and the number of observations of its series.
type Forecast struct {
	Value   float64
	SD      float64
	Support int
}

// Advise renders one forecast line per requested point, in order, then one line per requested
// history (the point's dimensions but its time) with its latest outcomes. It says nothing before the cluster holds minObservations.
func (Runtime) Advise(d *Data, b *Bindings, current *Batch, ev numeric.Event) numeric.Advice {
	f := d.Fit
	if f == nil || f.Observations < minObservations || len(current.Requested) == 0 {
		return numeric.Advice{}
	}
	adv := numeric.Advice{
		Head: fmt.Sprintf("Pooled estimates of %s, fitted to the outcomes that earlier tasks of this cluster revealed. "+
			"They are a starting point: revise them against what the current task shows.", b.Target),
		Foot: fmt.Sprintf("Fitted to %d distinct earlier outcomes%s.", f.Observations, seriesCount(b, f)),
	}
	var labels []string
	for _, p := range current.Requested {
		dims := present(p.Dims)
		fc := f.Predict(b, dims)
		key := numeric.Key{Target: p.Target, Dims: dims}
		adv.Lines = append(adv.Lines, fmt.Sprintf("forecast %s = %s (support %d)", key, plusMinus(fc.Value, fc.SD), fc.Support))
		if label := historyLabel(b, dims); !slices.Contains(labels, label) {
			labels = append(labels, label)
		}
	}
	for _, label := range labels {
		if line := f.recentLine(b, label); line != "" {
			adv.Lines = append(adv.Lines, line)
		}
	}
	return adv
}

// seriesCount says how many series the fit saw, when a key is bound.
func seriesCount(b *Bindings, f *Fit) string {
	if b.Key == "" {
		return ""
	}
	if len(f.Keys) == 1 {
		return fmt.Sprintf(" of 1 %s", b.Key)
	}
	return fmt.Sprintf(" of %d %ss", len(f.Keys), b.Key)
}

// Predict forecasts the point with dimensions dims (values present): the fitted predictor
// mapped back through the link, with the predictive sd by the delta method.
func (f *Fit) Predict(b *Bindings, dims map[string]string) Forecast {
	s := len(f.Cov)
	x := make([]float64, s) // the point's row of w
	x[0] = 1
	eta, variance := f.Mu, f.Sigma*f.Sigma
	if f.Trend {
		t, ok := timeOf(b, dims)
		if !ok {
			t = f.Latest
		}
		x[1] = t - f.TimeCenter
		eta += f.Beta * x[1]
	}
	for _, ff := range f.Factors {
		i, ok := slices.BinarySearchFunc(ff.Levels, dims[ff.Dim], func(l LevelFit, v string) int { return strings.Compare(l.Level, v) })
		if !ok {
			variance += ff.Tau * ff.Tau // a level never seen: its effect is a fresh draw
			continue
		}
		x[ff.Levels[i].Column] = 1
		eta += ff.Levels[i].Effect
	}
	for i := range s {
		for j := range s {
			variance += x[i] * f.Cov[i][j] * x[j]
		}
	}
	support := f.Observations
	k, seen := slices.BinarySearchFunc(f.Keys, dims[b.Key], func(kf KeyFit, v string) int { return strings.Compare(kf.Level, v) })
	if b.Key != "" {
		support = 0
		if seen {
			support = f.Keys[k].Support
		}
	}
	if f.KeyTerm {
		if seen {
			kf := f.Keys[k]
			eta += kf.Effect
			variance += kf.Var
			for i := range s {
				variance += 2 * kf.Cov[i] * x[i]
			}
		} else {
			variance += f.KeyTau * f.KeyTau
		}
	}
	y, slope := inverse(f.Family, eta)
	return Forecast{Value: y, SD: math.Abs(slope) * math.Sqrt(max(variance, 0)), Support: support}
}

// recentLine renders a history's latest outcomes, or "" when it has none.
func (f *Fit) recentLine(b *Bindings, label string) string {
	i, ok := slices.BinarySearchFunc(f.Histories, label, func(s History, l string) int { return strings.Compare(s.Label, l) })
	if !ok {
		return ""
	}
	parts := make([]string, len(f.Histories[i].Recent))
	for j, r := range f.Histories[i].Recent {
		parts[j] = r.Value
		if r.Time != "" {
			parts[j] = fmt.Sprintf("%s %s = %s", b.Time, r.Time, r.Value)
		}
	}
	return fmt.Sprintf("recent %s: %s", label, strings.Join(parts, ", "))
}

// plusMinus writes "N ± S" with S to two significant digits and N to the same decimal place.
func plusMinus(value, sd float64) string {
	places := 0
	if sd > 0 {
		places = min(max(1-int(math.Floor(math.Log10(sd))), 0), 9)
	}
	return fmt.Sprintf("%.*f ± %.*f", places, value, places, sd)
}
