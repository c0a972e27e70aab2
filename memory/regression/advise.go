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
// history (the point's dimensions but its time) with its latest outcomes. The forecasts are
// conditioned on the outcomes the current task shows that the data does not already hold (see
// conditioned). Requested points of another target are skipped. It says nothing before the
// cluster holds minObservations, nor without a fit (none could be computed).
func (Runtime) Advise(d *Data, b *Bindings, current *Batch, ev numeric.Event) numeric.Advice {
	f := d.Fit
	asked := slices.DeleteFunc(slices.Clone(current.Requested), func(p numeric.Key) bool { return p.Target != b.Target })
	if f == nil || f.Observations < minObservations || len(asked) == 0 {
		return numeric.Advice{}
	}
	vis := visibleOutcomes(d, b, current, ev)
	post := f.conditioned(b, vis, asked)
	adv := numeric.Advice{
		Head: fmt.Sprintf("Pooled estimates of %s, fitted to the outcomes that earlier tasks of this cluster revealed%s. "+
			"They are a starting point: revise them against what the current task shows.", b.Target, shownPhrase(" and updated with %s", vis)),
		Foot: fmt.Sprintf("Fitted to %d distinct earlier outcomes%s%s.", f.Observations, seriesCount(b, f), shownPhrase(", then conditioned on %s", vis)),
	}
	var labels []string
	for _, p := range asked {
		dims := present(p.Dims)
		fc := post.forecast(dims)
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

// shownPhrase fills format with how many outcomes of the current task the forecasts are
// conditioned on, or is "" when there are none.
func shownPhrase(format string, vis []shown) string {
	switch len(vis) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf(format, "1 outcome of the current task that the cluster did not hold")
	}
	return fmt.Sprintf(format, fmt.Sprintf("%d outcomes of the current task that the cluster did not hold", len(vis)))
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

// Predict forecasts the point with dimensions dims (values present) from the fit alone: the
// fitted predictor mapped back through the link, with the predictive sd by the delta method.
func (f *Fit) Predict(b *Bindings, dims map[string]string) Forecast {
	return f.conditioned(b, nil, []numeric.Key{{Target: b.Target, Dims: dims}}).forecast(dims)
}

// key finds an observed level of the key dimension in f.Keys.
func (f *Fit) key(level string) (int, bool) {
	return slices.BinarySearchFunc(f.Keys, level, func(kf KeyFit, v string) int { return strings.Compare(kf.Level, v) })
}

// level finds a fitted level of the factor.
func (ff *FactorFit) level(level string) (int, bool) {
	return slices.BinarySearchFunc(ff.Levels, level, func(l LevelFit, v string) int { return strings.Compare(l.Level, v) })
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
