package hazard

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/gonum/optimize"

	"github.com/hippocam/hippocam/memory/numeric"
)

// PseudoSize is W, the sample size a realized curve is taken to stand for. Such a curve comes
// from a larger sample than one task's cohort, but its size is not shown; 100 lets one curve
// weigh about as much as two cohorts of fifty, so that repeated feedback adds up while a single
// curve does not override the counts. At a typical hazard of 0.1 a sample of 100 has a
// binomial sd near 0.03 per interval, about the precision such curves are reported with.
const PseudoSize = 100.0

// The priors: the sd of an interval's baseline around the pooled logit, and the one sd shared
// by every effect (features, entities, contexts).
const (
	baselineSD = 3.0
	effectSD   = 1.0
)

// Data is a hazard cluster's state: the raw records (so that Forget can take a source's out)
// and the fit of all of them.
type Data struct {
	// Intervals is J, from the bindings of the first ingested batch.
	Intervals int      `json:"intervals"`
	Records   []Record `json:"records"`
	// Fit is nil while no record has anyone at risk.
	Fit *Fit `json:"fit"`
}

// Record is one interval of one key: at risk at its start and events within it, real counts or
// pseudo-counts from a realized curve.
type Record struct {
	Source   string            `json:"source"`
	Index    int               `json:"index"`
	Entity   map[string]string `json:"entity"`
	Context  map[string]string `json:"context"`
	Interval int               `json:"interval"`
	AtRisk   float64           `json:"at_risk"`
	Events   float64           `json:"events"`
	// Pseudo marks pseudo-counts made from a realized curve.
	Pseudo bool `json:"pseudo,omitempty"`
}

// Fit is the MAP point of the model (see the package doc) and what Advise needs besides.
type Fit struct {
	// PooledLogit is logit p0, the prior mean of every baseline.
	PooledLogit float64 `json:"pooled_logit"`
	// Baseline is alpha_1..alpha_J; intervals without data are filled as the package doc says.
	Baseline []float64 `json:"baseline"`
	// Seen marks the intervals that had data.
	Seen []bool `json:"seen"`
	// Features, Entities and Contexts are beta[d=v], u[key] and c[role=value].
	Features map[string]float64 `json:"features"`
	Entities map[string]float64 `json:"entities"`
	Contexts map[string]float64 `json:"contexts"`
	// Support is each entity key's at-risk total in interval 1, real and pseudo.
	Support map[string]float64 `json:"support"`
}

// Ingest adds the counts and curves of x (never its requests) as records of event ev and
// refits. Ingesting an event again replaces what it gave before.
func (Runtime) Ingest(d *Data, b *Bindings, x *Batch, ev numeric.Event) {
	d.Intervals = b.Intervals
	d.Records = slices.DeleteFunc(d.Records, func(r Record) bool { return r.Source == ev.Source && r.Index == ev.Index })
	for _, c := range x.Counts {
		if r, ok := countRecord(b, c, ev); ok {
			d.Records = append(d.Records, r)
		}
	}
	for _, c := range x.Curves {
		d.Records = append(d.Records, curveRecords(b, c, ev)...)
	}
	d.Fit = fit(d.Records, d.Intervals)
}

// Forget removes the records of the given sources and refits.
func (Runtime) Forget(d *Data, sources []string) {
	n := len(d.Records)
	d.Records = slices.DeleteFunc(d.Records, func(r Record) bool { return slices.Contains(sources, r.Source) })
	if len(d.Records) != n {
		d.Fit = fit(d.Records, d.Intervals)
	}
}

func countRecord(b *Bindings, c Count, ev numeric.Event) (Record, bool) {
	j, err1 := numeric.Float(c.Interval)
	n, err2 := numeric.Float(c.AtRisk)
	e, err3 := numeric.Float(c.Events)
	if err1 != nil || err2 != nil || err3 != nil || j < 1 || j > float64(b.Intervals) || n < 0 || e < 0 || e > n {
		return Record{}, false
	}
	entity, context := split(b, c.Dims)
	return Record{Source: ev.Source, Index: ev.Index, Entity: entity, Context: context,
		Interval: int(j), AtRisk: n, Events: e}, true
}

// curveRecords turns a realized curve into pseudo-counts of a sample of PseudoSize.
func curveRecords(b *Bindings, c Curve, ev numeric.Event) []Record {
	entity, context := split(b, c.Dims)
	var out []Record
	prev := 1.0
	for j, v := range c.Values {
		s, err := numeric.Float(v)
		if err != nil || j >= b.Intervals {
			break
		}
		s = min(max(s, 0), prev)
		n := PseudoSize * prev
		if n > 0 {
			out = append(out, Record{Source: ev.Source, Index: ev.Index, Entity: entity, Context: context,
				Interval: j + 1, AtRisk: n, Events: PseudoSize * (prev - s), Pseudo: true})
		}
		prev = s
	}
	return out
}

// split parts a record's stated dims into its entity and its context dimensions; unbound ones
// are dropped (CheckBatch refuses them).
func split(b *Bindings, dims map[string]string) (entity, context map[string]string) {
	entity, context = map[string]string{}, map[string]string{}
	for d, v := range stated(dims) {
		switch {
		case slices.Contains(b.Entity, d):
			entity[d] = v
		case slices.Contains(b.Contexts, d):
			context[d] = v
		}
	}
	return entity, context
}

// evidence is the at-risk total of records.
func evidence(records []Record) float64 {
	var n float64
	for _, r := range records {
		n += r.AtRisk
	}
	return n
}

// cell is the summed data of one entity key, context and interval, with the indices of its
// parameters.
type cell struct {
	interval int // 0-based
	params   []int
	n, d     float64
}

// problem is the fit's data laid out over one parameter vector: the J baselines, then the
// features, entities and contexts, each sorted by name.
type problem struct {
	j     int
	prior float64
	// scale divides the objective: the at-risk total, so that the stopping rule on the
	// gradient is relative to the amount of data.
	scale    float64
	cells    []cell
	features []string
	entities []string
	contexts []string
}

func (p *problem) size() int { return p.j + len(p.features) + len(p.entities) + len(p.contexts) }

// fit returns the MAP fit of records over J intervals, nil when no one is at risk.
func fit(records []Record, j int) *Fit {
	p := layout(records, j)
	if p == nil {
		return nil
	}
	x := p.start()
	if res, err := optimize.Minimize(optimize.Problem{Func: p.objective, Grad: p.gradient}, x, settings(), &optimize.LBFGS{}); res != nil && finite(res.X) {
		if err == nil || res.F <= p.objective(x) {
			x = res.X
		}
	}
	return p.result(x, records)
}

func settings() *optimize.Settings {
	return &optimize.Settings{
		GradientThreshold: 1e-9,
		MajorIterations:   2000,
		Converger:         &optimize.FunctionConverge{Absolute: 1e-11, Relative: 1e-13, Iterations: 20},
	}
}

// layout collects the cells of records with anyone at risk; nil when there are none.
func layout(records []Record, j int) *problem {
	type key struct {
		entity, context string
		interval        int
	}
	type sum struct {
		key
		features, contexts []string
		n, d               float64
	}
	sums := map[key]*sum{}
	var order []*sum
	feats, ents, ctxs := map[string]bool{}, map[string]bool{}, map[string]bool{}
	var n, d float64
	for _, r := range records {
		if r.AtRisk <= 0 || r.Interval < 1 || r.Interval > j {
			continue
		}
		k := key{entityKey(r.Entity), entityKey(r.Context), r.Interval - 1}
		c := sums[k]
		if c == nil {
			c = &sum{key: k, features: featureNames(r.Entity), contexts: featureNames(r.Context)}
			sums[k] = c
			order = append(order, c)
			ents[k.entity] = true
			for _, f := range c.features {
				feats[f] = true
			}
			for _, f := range c.contexts {
				ctxs[f] = true
			}
		}
		c.n += r.AtRisk
		c.d += r.Events
		n += r.AtRisk
		d += r.Events
	}
	if n == 0 {
		return nil
	}
	p := &problem{j: j, prior: logit((d + 0.5) / (n + 1)), scale: n, features: sortedSet(feats), entities: sortedSet(ents), contexts: sortedSet(ctxs)}
	slices.SortFunc(order, func(a, b *sum) int {
		return cmp.Or(strings.Compare(a.entity, b.entity), strings.Compare(a.context, b.context), cmp.Compare(a.interval, b.interval))
	})
	for _, c := range order {
		p.cells = append(p.cells, cell{interval: c.interval, params: p.indices(c.interval, c.features, c.entity, c.contexts), n: c.n, d: c.d})
	}
	return p
}

// indices lists the parameters in a cell's linear predictor.
func (p *problem) indices(interval int, features []string, entity string, contexts []string) []int {
	idx := []int{interval}
	for _, f := range features {
		i, _ := slices.BinarySearch(p.features, f)
		idx = append(idx, p.j+i)
	}
	i, _ := slices.BinarySearch(p.entities, entity)
	idx = append(idx, p.j+len(p.features)+i)
	for _, f := range contexts {
		i, _ := slices.BinarySearch(p.contexts, f)
		idx = append(idx, p.j+len(p.features)+len(p.entities)+i)
	}
	return idx
}

// start is the starting point: each baseline at its interval's pooled logit, effects at 0.
func (p *problem) start() []float64 {
	x := make([]float64, p.size())
	n := make([]float64, p.j)
	d := make([]float64, p.j)
	for _, c := range p.cells {
		n[c.interval] += c.n
		d[c.interval] += c.d
	}
	for i := range p.j {
		x[i] = p.prior
		if n[i] > 0 {
			x[i] = logit((d[i] + 0.5) / (n[i] + 1))
		}
	}
	return x
}

// objective is the negative log posterior (up to a constant), divided by scale.
func (p *problem) objective(x []float64) float64 {
	var f float64
	for _, c := range p.cells {
		eta := predictor(x, c.params)
		f += c.n*softplus(eta) - c.d*eta
	}
	for i := range p.j {
		f += sq(x[i]-p.prior) / (2 * baselineSD * baselineSD)
	}
	for _, v := range x[p.j:] {
		f += v * v / (2 * effectSD * effectSD)
	}
	return f / p.scale
}

// gradient is the objective's gradient: each cell adds n*h - d to its parameters (before
// scaling).
func (p *problem) gradient(grad, x []float64) {
	for i := range p.j {
		grad[i] = (x[i] - p.prior) / (baselineSD * baselineSD)
	}
	for i := p.j; i < len(x); i++ {
		grad[i] = x[i] / (effectSD * effectSD)
	}
	for _, c := range p.cells {
		g := c.n*sigmoid(predictor(x, c.params)) - c.d
		for _, i := range c.params {
			grad[i] += g
		}
	}
	for i := range grad {
		grad[i] /= p.scale
	}
}

// result names the fitted parameters, fills the intervals without data and adds the supports.
func (p *problem) result(x []float64, records []Record) *Fit {
	f := &Fit{PooledLogit: p.prior, Baseline: make([]float64, p.j), Seen: make([]bool, p.j),
		Features: map[string]float64{}, Entities: map[string]float64{}, Contexts: map[string]float64{}, Support: map[string]float64{}}
	for _, c := range p.cells {
		f.Seen[c.interval] = true
	}
	last := p.prior
	for i := range p.j {
		if f.Seen[i] {
			last = x[i]
		}
		f.Baseline[i] = last
	}
	for i, name := range p.features {
		f.Features[name] = x[p.j+i]
	}
	for i, name := range p.entities {
		f.Entities[name] = x[p.j+len(p.features)+i]
	}
	for i, name := range p.contexts {
		f.Contexts[name] = x[p.j+len(p.features)+len(p.entities)+i]
	}
	for _, r := range records {
		if r.Interval == 1 && r.AtRisk > 0 {
			f.Support[entityKey(r.Entity)] += r.AtRisk
		}
	}
	return f
}

// Curve is the fitted event-free curve over j intervals of an entity under a context (either
// may hold values never seen: their effects count 0). Intervals past the fitted ones carry the
// last baseline on.
func (f *Fit) Curve(entity, context map[string]string, j int) []float64 {
	return f.curve(f.Entities[entityKey(entity)], entity, context, j)
}

// curve is Curve with the entity's own effect u given.
func (f *Fit) curve(u float64, entity, context map[string]string, j int) []float64 {
	shift := u
	for _, n := range featureNames(entity) {
		shift += f.Features[n]
	}
	for _, n := range featureNames(context) {
		shift += f.Contexts[n]
	}
	out := make([]float64, j)
	s := 1.0
	for i := range j {
		s *= 1 - sigmoid(f.alpha(i)+shift)
		out[i] = s
	}
	return out
}

// alpha is the baseline of interval i (0-based); past the fitted intervals the last one goes
// on, and without any the pooled logit stands.
func (f *Fit) alpha(i int) float64 {
	if len(f.Baseline) == 0 {
		return f.PooledLogit
	}
	return f.Baseline[min(i, len(f.Baseline)-1)]
}

// sum adds the effects of the d=v pairs of dims (0 for a pair never seen).
func (f *Fit) sum(effects map[string]float64, dims map[string]string) float64 {
	var s float64
	for _, n := range featureNames(dims) {
		s += effects[n]
	}
	return s
}

// entityKey names an entity (or a context) by its dims alone, the target being the cluster's
// one: the pairs d=v sorted by name, joined by commas ("" for none).
func entityKey(dims map[string]string) string { return strings.Join(featureNames(dims), ",") }

// featureNames lists dims as d=v pairs sorted by name.
func featureNames(dims map[string]string) []string {
	names := sortedNames(dims)
	for i, n := range names {
		names[i] = n + "=" + dims[n]
	}
	return names
}

func predictor(x []float64, params []int) float64 {
	var eta float64
	for _, i := range params {
		eta += x[i]
	}
	return eta
}

func softplus(x float64) float64 {
	if x > 0 {
		return x + math.Log1p(math.Exp(-x))
	}
	return math.Log1p(math.Exp(x))
}

func sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

func logit(p float64) float64 { return math.Log(p / (1 - p)) }

func sq(x float64) float64 { return x * x }

func finite(x []float64) bool {
	return !slices.ContainsFunc(x, func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) })
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
