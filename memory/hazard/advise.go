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
// gets a curve, from its features and the baseline, with support 0. A key whose counts the
// current task shows (and the data does not hold) gets its own effect re-estimated with them
// (see condition), and its support counts them. Without any evidence there are no lines.
func (Runtime) Advise(d *Data, b *Bindings, current *Batch, ev numeric.Event) numeric.Advice {
	if d.Fit == nil {
		return numeric.Advice{}
	}
	type asked struct {
		name            string
		entity, context map[string]string
		j               int
	}
	var keys []asked
	var entities []map[string]string
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
		keys = append(keys, asked{name, entity, context, j})
		entities = append(entities, entity)
	}
	if len(keys) == 0 {
		return numeric.Advice{}
	}
	updates := d.condition(b, entities, current, ev)
	var lines []string
	for _, k := range keys {
		ek := entityKey(k.entity)
		if up, ok := updates[ek]; ok {
			lines = append(lines, curveLine(k.name, d.Fit.curve(up.u, k.entity, k.context, k.j), up.support))
			continue
		}
		lines = append(lines, curveLine(k.name, d.Fit.Curve(k.entity, k.context, k.j), d.Fit.Support[ek]))
	}
	if len(updates) > 0 {
		return numeric.Advice{
			Head: "Event-free curves pooled from the per-interval aggregates of earlier tasks in this cluster; " +
				"groups seen rarely or never borrow from groups that share their conditions. " +
				"A group whose counts the current task shows has its curve already updated with them: do not add them again.",
			Foot:  "Support is the number at risk in the first interval behind a curve, the current task's included (0: no data of its own).",
			Lines: lines,
		}
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
