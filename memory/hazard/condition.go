package hazard

import (
	"maps"
	"math"

	"github.com/hippocam/hippocam/memory/numeric"
)

// The Newton iterations of a key's effect: at most newtonSteps, each moved at most maxStep on
// the logit scale, stopping once a step is under newtonTolerance.
const (
	newtonSteps     = 50
	maxStep         = 2.0
	newtonTolerance = 1e-10
)

// tally is the summed counts of one context and interval of a key (n at risk, d events).
type tally struct {
	context  map[string]string
	ctxKey   string
	interval int // 0-based
	n, d     float64
}

// update is a requested key's own effect and support once the current counts are added.
type update struct {
	u, support float64
}

// keyCounts is what one requested key holds: the stored cells of other events, the stored
// cells of the current event (held) and the current batch's cells (shown), each in the order
// first met.
type keyCounts struct {
	entity map[string]string
	// pairs are entity's dims and values, compared one by one (no map iteration per record).
	pairs               [][2]string
	stored, held, shown []tally
}

// add sums counts into the cell of (context, interval), appending it when new.
func add(cells []tally, context map[string]string, interval int, n, d float64) []tally {
	ck := entityKey(context)
	for i := range cells {
		if cells[i].interval == interval && cells[i].ctxKey == ck {
			cells[i].n += n
			cells[i].d += d
			return cells
		}
	}
	return append(cells, tally{context: context, ctxKey: ck, interval: interval, n: n, d: d})
}

// find returns the cell of (ctxKey, interval), or nil.
func find(cells []tally, ctxKey string, interval int) *tally {
	for i := range cells {
		if cells[i].interval == interval && cells[i].ctxKey == ctxKey {
			return &cells[i]
		}
	}
	return nil
}

// condition re-estimates the effect of each requested entity for which the current batch x
// holds counts that d does not (see the package doc), keyed by entity key. A key whose counts
// are all held, or that x has no counts of, is left out: its stored fit stands.
func (d *Data) condition(b *Bindings, entities []map[string]string, x *Batch, ev numeric.Event) map[string]update {
	keys := d.shown(b, entities, x, ev)
	if len(keys) == 0 {
		return nil
	}
	d.scan(keys, ev)
	out := map[string]update{}
	for ek, e := range keys {
		if cells, ok := e.merged(); ok {
			out[ek] = d.Fit.effect(e.entity, ek, cells)
		}
	}
	return out
}

// shown collects the current batch's counts of the requested entities, read as Ingest reads
// them (countRecord), summed per context and interval.
func (d *Data) shown(b *Bindings, entities []map[string]string, x *Batch, ev numeric.Event) map[string]*keyCounts {
	var keys map[string]*keyCounts
	for _, c := range x.Counts {
		r, ok := countRecord(b, c, ev)
		if !ok || r.Interval > d.Intervals {
			continue
		}
		for _, entity := range entities {
			if !maps.Equal(entity, r.Entity) {
				continue
			}
			if keys == nil {
				keys = map[string]*keyCounts{}
			}
			ek := entityKey(entity)
			e := keys[ek]
			if e == nil {
				e = &keyCounts{entity: entity}
				for _, dim := range sortedNames(entity) {
					e.pairs = append(e.pairs, [2]string{dim, entity[dim]})
				}
				keys[ek] = e
			}
			e.shown = add(e.shown, r.Context, r.Interval-1, r.AtRisk, r.Events)
			break
		}
	}
	return keys
}

// scan sums the stored records of each key, those with anyone at risk (as the fit reads
// them): the counts of the current task's own source apart, since the current batch replaces
// them cell by cell.
func (d *Data) scan(keys map[string]*keyCounts, ev numeric.Event) {
	list := make([]*keyCounts, 0, len(keys))
	for _, e := range keys {
		list = append(list, e)
	}
	for _, r := range d.Records {
		if r.AtRisk <= 0 || r.Interval < 1 || r.Interval > d.Intervals {
			continue
		}
		for _, e := range list {
			if !e.is(r.Entity) {
				continue
			}
			if r.Source == ev.Source && !r.Pseudo {
				e.held = add(e.held, r.Context, r.Interval-1, r.AtRisk, r.Events)
			} else {
				e.stored = add(e.stored, r.Context, r.Interval-1, r.AtRisk, r.Events)
			}
			break
		}
	}
}

// is reports whether entity is the key's.
func (e *keyCounts) is(entity map[string]string) bool {
	if len(entity) != len(e.pairs) {
		return false
	}
	for _, p := range e.pairs {
		if v, ok := entity[p[0]]; !ok || v != p[1] {
			return false
		}
	}
	return true
}

// merged is the key's evidence with the current batch in: each shown cell replaces the held
// cell of the same context and interval, held cells the batch does not show stay. ok is false
// when the shown cells equal the held ones, so that nothing changes.
func (e *keyCounts) merged() (cells []tally, ok bool) {
	for _, s := range e.shown {
		h := find(e.held, s.ctxKey, s.interval)
		if h == nil && s.n > 0 || h != nil && (h.n != s.n || h.d != s.d) {
			ok = true
		}
	}
	if !ok {
		return nil, false
	}
	for _, c := range e.stored {
		cells = add(cells, c.context, c.interval, c.n, c.d)
	}
	for _, c := range e.held {
		if find(e.shown, c.ctxKey, c.interval) == nil {
			cells = add(cells, c.context, c.interval, c.n, c.d)
		}
	}
	for _, c := range e.shown {
		cells = add(cells, c.context, c.interval, c.n, c.d)
	}
	return cells, true
}

// effect is the MAP of one entity's u given cells, every other parameter at its fitted value:
// safeguarded Newton steps on the one-dimensional log posterior from the fitted u (0 for a key
// never seen). The support is the at-risk total of the first interval.
func (f *Fit) effect(entity map[string]string, ek string, cells []tally) update {
	base := f.sum(f.Features, entity)
	eta := make([]float64, len(cells))
	var support float64
	for i, c := range cells {
		eta[i] = f.alpha(c.interval) + base + f.sum(f.Contexts, c.context)
		if c.interval == 0 {
			support += c.n
		}
	}
	return update{u: newton(f.Entities[ek], cells, eta), support: support}
}

// newton maximizes l(u) = sum_c [d_c (eta_c + u) - n_c log(1 + e^(eta_c + u))] - u^2 / (2 sd^2)
// from u. l is strictly concave, so its derivative falls through 0 once: every point evaluated
// narrows a bracket of the root, and a step that leaves the bracket is replaced by its middle.
func newton(u float64, cells []tally, eta []float64) float64 {
	lo, hi := math.Inf(-1), math.Inf(1)
	for range newtonSteps {
		g, h := -u/(effectSD*effectSD), 1/(effectSD*effectSD)
		for i, c := range cells {
			p := sigmoid(eta[i] + u)
			g += c.d - c.n*p
			h += c.n * p * (1 - p)
		}
		if g > 0 {
			lo = u
		} else {
			hi = u
		}
		step := min(max(g/h, -maxStep), maxStep)
		if math.Abs(step) < newtonTolerance {
			return u + step
		}
		if next := u + step; next > lo && next < hi {
			u = next
		} else {
			u = lo + (hi-lo)/2 // both ends are finite here: a step never leaves by an open end
		}
	}
	return u
}
