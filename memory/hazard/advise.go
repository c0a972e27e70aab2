package hazard

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/hippocam/hippocam/memory/numeric"
)

// Advise renders one line per requested curve, in request order (a key asked for twice is
// rendered once): `curve KEY = [s1, …, sJ] (support K)`, three decimals. A key never seen still
// gets a curve, from its features and the baseline, with support 0. Without any evidence there
// are no lines.
func (Runtime) Advise(d *Data, b *Bindings, current *Batch, ev numeric.Event) numeric.Advice {
	if d.Fit == nil {
		return numeric.Advice{}
	}
	var lines []string
	done := map[string]bool{}
	for _, r := range current.Requested {
		j := b.Intervals
		if f, err := numeric.Float(r.Intervals); err == nil && f >= 1 && f <= MaxIntervals && f == math.Trunc(f) {
			j = int(f)
		}
		key := numeric.Key{Target: r.Target, Dims: stated(r.Dims)}
		name := key.String()
		if done[name] {
			continue
		}
		done[name] = true
		entity, context := split(b, key.Dims)
		lines = append(lines, curveLine(name, d.Fit.Curve(entity, context, j), d.Fit.Support[entityKey(entity)]))
	}
	if len(lines) == 0 {
		return numeric.Advice{}
	}
	return numeric.Advice{
		Head: "Event-free curves pooled from the per-interval aggregates of earlier tasks in this cluster; " +
			"groups seen rarely or never borrow from groups that share their conditions. " +
			"The current task's own counts may come from a biased sample.",
		Foot:  "Support is the number at risk in the first interval behind a curve (0: no data of its own).",
		Lines: lines,
	}
}

func curveLine(key string, s []float64, support float64) string {
	vals := make([]string, len(s))
	for i, v := range s {
		vals[i] = strconv.FormatFloat(v, 'f', 3, 64)
	}
	return fmt.Sprintf("curve %s = [%s] (support %s)", key, strings.Join(vals, ", "), strconv.FormatFloat(math.Round(support), 'f', 0, 64))
}
