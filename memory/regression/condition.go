package regression

import (
	"cmp"
	"maps"
	"math"

	"github.com/hippocam/hippocam/memory/numeric"
)

// vagueSeries is the prior variance, in units of sigma^2, of a series effect that the fit
// cannot pool: a new series when the fit saw fewer than 2 (so no spread between series was
// estimated). It is large enough that the series' own outcomes alone set its level.
const vagueSeries = 1e6

// shown is an outcome of the current task that changes what the data says: a point the data
// does not hold, or one it holds with another value from an earlier event (held; shift is the
// change of the value on the link scale).
type shown struct {
	dims  map[string]string
	key   string // the series ("" when none)
	z     float64
	held  bool
	shift float64
}

// visibleOutcomes returns the outcomes of x (of the bound target) that change what d holds,
// with Ingest's identity and precedence: one per point (the batch's last), and a point that d
// holds only when ev is no earlier than the record d keeps for it and the value differs.
// They come sorted by point.
func visibleOutcomes(d *Data, b *Bindings, x *Batch, ev numeric.Event) []shown {
	var recs []Record
	for i, o := range x.Outcomes {
		if o.Target == b.Target {
			recs = append(recs, Record{Source: ev.Source, Index: ev.Index, Order: i, Dims: present(o.Dims), Value: o.Value})
		}
	}
	if len(recs) == 0 {
		return nil
	}
	points := observations(b, recs)
	held := latestHeld(b, d.Records, d.Fit, points)
	var out []shown
	for i, o := range points {
		s := shown{dims: o.Dims, key: o.Dims[b.Key], z: link(b.Family, o.y)}
		if h := held[i]; h >= 0 {
			r := d.Records[h]
			if later(r, o.Record) {
				continue
			}
			y, _ := numeric.Float(r.Value)
			s.held, s.shift = true, s.z-link(b.Family, y)
			if s.shift == 0 {
				continue
			}
		}
		out = append(out, s)
	}
	return out
}

// latestHeld finds, for each point, the place in records of the record the fit f keeps for
// it (the latest valid one with the same dimensions), or -1. Only points of a series f saw (or
// without a series) are looked for, and one dimension is compared first (the time, else the
// key), so that most records cost one map lookup.
func latestHeld(b *Bindings, records []Record, f *Fit, points []observation) []int {
	probe := cmp.Or(b.Time, b.Key)
	held := make([]int, len(points))
	var look []int
	var want []string
	for j, p := range points {
		held[j] = -1
		if _, seen := f.key(p.Dims[b.Key]); seen || p.Dims[b.Key] == "" {
			look, want = append(look, j), append(want, p.Dims[probe])
		}
	}
	if len(look) == 0 {
		return held
	}
	for i, r := range records {
		v := r.Dims[probe]
		for n, j := range look {
			if want[n] != v || !maps.Equal(r.Dims, points[j].Dims) || !valid(b, r) {
				continue
			}
			if h := held[j]; h < 0 || !later(records[h], r) {
				held[j] = i
			}
		}
	}
	return held
}

// valid reports whether the fit reads r: its value parses and fits the family.
func valid(b *Bindings, r Record) bool {
	y, err := numeric.Float(r.Value)
	return err == nil && checkFamily(b.Family, y) == nil
}

// later reports whether record p comes after q in the cluster's stream.
func later(p, q Record) bool {
	return cmp.Or(cmp.Compare(p.Index, q.Index), cmp.Compare(p.Order, q.Order)) > 0
}

// posterior is the joint normal posterior, at the fitted variance components, of the effects
// that some requested point or shown outcome involves: w (mu, beta and the fitted factor
// levels) first, then one entry per series and per factor level outside w. Conditioning it on
// the shown outcomes is exactly what a refit that kept the variance components would give.
type posterior struct {
	f       *Fit
	b       *Bindings
	latest  float64           // the latest time, shown outcomes included
	entries map[[2]string]int // (dimension, level) of a series or unfitted level -> place in mean
	mean    []float64
	cov     [][]float64
	added   map[string]int // new observations per series ("" when no key is bound)
}

// prior is an entry's prior: a fitted series (seen, its place in Fit.Keys) or a fresh effect
// N(0, v).
type prior struct {
	seen int
	v    float64
}

// conditioned is f's posterior for the requested points, conditioned on the shown outcomes in
// their order.
func (f *Fit) conditioned(b *Bindings, vis []shown, requested []numeric.Key) *posterior {
	p := &posterior{f: f, b: b, latest: f.Latest, entries: map[[2]string]int{}, added: map[string]int{}}
	var priors []prior
	for _, s := range vis {
		priors = p.declare(priors, s.dims, false)
		if t, ok := timeOf(b, s.dims); ok {
			p.latest = max(p.latest, t)
		}
	}
	for _, r := range requested {
		priors = p.declare(priors, present(r.Dims), true)
	}
	p.start(priors)
	for _, s := range vis {
		idx, val, _ := p.row(s.dims, false)
		if s.held {
			p.shift(idx, val, s.shift)
			continue
		}
		p.observe(idx, val, s.z)
		p.added[s.key]++
	}
	return p
}

// declare adds to priors the entries a point needs beyond w: its series, and each factor level
// the fit has not seen. A new series of a fit without a series term gets an entry only from a
// shown outcome (a request alone is forecast as the one series the fit saw, as before).
func (p *posterior) declare(priors []prior, dims map[string]string, request bool) []prior {
	f := p.f
	add := func(dim, level string, pr prior) {
		if _, ok := p.entries[[2]string{dim, level}]; !ok {
			p.entries[[2]string{dim, level}] = len(f.Cov) + len(priors)
			priors = append(priors, pr)
		}
	}
	if level := dims[p.b.Key]; p.b.Key != "" && level != "" {
		k, seen := f.key(level)
		switch {
		case f.KeyTerm && seen:
			add(p.b.Key, level, prior{seen: k})
		case f.KeyTerm:
			add(p.b.Key, level, prior{seen: -1, v: f.KeyTau * f.KeyTau})
		case !seen && !request:
			add(p.b.Key, level, prior{seen: -1, v: vagueSeries * f.Sigma * f.Sigma})
		}
	}
	for _, ff := range f.Factors {
		if level := dims[ff.Dim]; level != "" {
			if _, ok := ff.level(level); !ok {
				add(ff.Dim, level, prior{seen: -1, v: ff.Tau * ff.Tau})
			}
		}
	}
	return priors
}

// start sets the prior: w and its covariance from the fit, then the entries. Two fitted series
// are correlated through w: Cov(a_k, a_j) = Share_k' Cov(w) Share_j = -Share_k' Cov(a_j, w).
func (p *posterior) start(priors []prior) {
	f := p.f
	s, n := len(f.Cov), len(f.Cov)+len(priors)
	p.mean = make([]float64, n)
	p.mean[0] = f.Mu
	if f.Trend {
		p.mean[1] = f.Beta
	}
	for _, ff := range f.Factors {
		for _, l := range ff.Levels {
			p.mean[l.Column] = l.Effect
		}
	}
	p.cov = make([][]float64, n)
	cells := make([]float64, n*n)
	for i := range p.cov {
		p.cov[i] = cells[i*n : (i+1)*n]
	}
	for i := range s {
		copy(p.cov[i], f.Cov[i])
	}
	for e, pr := range priors {
		i := s + e
		if pr.seen < 0 {
			p.cov[i][i] = pr.v
			continue
		}
		kf := f.Keys[pr.seen]
		p.mean[i], p.cov[i][i] = kf.Effect, kf.Var
		for j, c := range kf.Cov {
			p.cov[i][j], p.cov[j][i] = c, c
		}
		for e2, other := range priors[:e] {
			if other.seen < 0 || len(kf.Share) != s {
				continue // data fitted before shares were kept: the series count as uncorrelated
			}
			c := 0.0
			for j, w := range kf.Share {
				c -= w * f.Keys[other.seen].Cov[j]
			}
			p.cov[i][s+e2], p.cov[s+e2][i] = c, c
		}
	}
}

// row is a point's sparse row over the posterior's entries, and the variance of its effects
// that no entry carries (a factor level or series the point does not give, for a request).
// A request without a time is at the latest time; an outcome without one at the centre, as in
// the fit's design.
func (p *posterior) row(dims map[string]string, request bool) (idx []int, val []float64, extra float64) {
	f := p.f
	idx, val = []int{0}, []float64{1}
	if f.Trend {
		x := 0.0
		if t, ok := timeOf(p.b, dims); ok {
			x = t - f.TimeCenter
		} else if request {
			x = p.latest - f.TimeCenter
		}
		idx, val = append(idx, 1), append(val, x)
	}
	for _, ff := range f.Factors {
		level := dims[ff.Dim]
		if l, ok := ff.level(level); ok {
			idx, val = append(idx, ff.Levels[l].Column), append(val, 1)
		} else if e, ok := p.entries[[2]string{ff.Dim, level}]; ok && level != "" {
			idx, val = append(idx, e), append(val, 1)
		} else if request {
			extra += ff.Tau * ff.Tau // a level not given: a fresh draw
		}
	}
	if p.b.Key != "" {
		level := dims[p.b.Key]
		if e, ok := p.entries[[2]string{p.b.Key, level}]; ok && level != "" {
			idx, val = append(idx, e), append(val, 1)
		} else if f.KeyTerm && request {
			extra += f.KeyTau * f.KeyTau
		}
	}
	return idx, val, extra
}

// spread is cov times the sparse row.
func (p *posterior) spread(idx []int, val []float64) []float64 {
	ph := make([]float64, len(p.mean))
	for i, r := range p.cov {
		for j, c := range idx {
			ph[i] += r[c] * val[j]
		}
	}
	return ph
}

// observe conditions the posterior on one new observation z of the row (a Kalman step).
func (p *posterior) observe(idx []int, val []float64, z float64) {
	ph := p.spread(idx, val)
	predicted, variance := 0.0, p.f.Sigma*p.f.Sigma
	for j, c := range idx {
		predicted += val[j] * p.mean[c]
		variance += val[j] * ph[c]
	}
	gain := (z - predicted) / variance
	for i, r := range p.cov {
		p.mean[i] += ph[i] * gain
		for j := range r {
			r[j] -= ph[i] * ph[j] / variance
		}
	}
}

// shift moves the posterior for a held observation of the row whose value changed by dz:
// the precision stays, and the mean moves by cov h dz / sigma^2.
func (p *posterior) shift(idx []int, val []float64, dz float64) {
	ph := p.spread(idx, val)
	for i := range p.mean {
		p.mean[i] += ph[i] * dz / (p.f.Sigma * p.f.Sigma)
	}
}

// forecast is the posterior's forecast of a requested point: the predictor through the
// inverse link, its predictive sd by the delta method, and the observations of its series.
func (p *posterior) forecast(dims map[string]string) Forecast {
	f := p.f
	idx, val, extra := p.row(dims, true)
	eta, variance := 0.0, f.Sigma*f.Sigma+extra
	for i, c := range idx {
		eta += val[i] * p.mean[c]
		for j, c2 := range idx {
			variance += val[i] * p.cov[c][c2] * val[j]
		}
	}
	support := f.Observations + p.added[""]
	if p.b.Key != "" {
		level := dims[p.b.Key]
		support = 0
		if k, ok := f.key(level); ok {
			support = f.Keys[k].Support
		}
		if level != "" {
			support += p.added[level]
		}
	}
	y, slope := inverse(f.Family, eta)
	return Forecast{Value: y, SD: math.Abs(slope) * math.Sqrt(max(variance, 0)), Support: support}
}
