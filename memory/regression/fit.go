package regression

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/hippocam/hippocam/memory/numeric"
)

// Fit is the fitted model of a cluster's distinct observations. Effects and variances are on
// the link scale. The fixed-and-factor parameter vector w holds mu first, then beta when the
// trend is fitted, then every factor level in the model (LevelFit.Column says where).
type Fit struct {
	Family       string `json:"family"`
	Observations int    `json:"observations"`
	Iterations   int    `json:"iterations"`

	Mu         float64 `json:"mu"`
	Trend      bool    `json:"trend"`
	Beta       float64 `json:"beta"`
	TimeCenter float64 `json:"time_center"`
	// Latest is the latest time observed: the time of a requested point that gives none.
	Latest float64 `json:"latest"`
	Sigma  float64 `json:"sigma"`

	// KeyTerm says whether the series effects a[k] are in the model (2 or more series seen).
	KeyTerm bool    `json:"key_term"`
	KeyTau  float64 `json:"key_tau"`
	// Keys are the observed levels of the key dimension, sorted.
	Keys    []KeyFit    `json:"keys,omitempty"`
	Factors []FactorFit `json:"factors,omitempty"`
	// Cov is the posterior covariance of w.
	Cov [][]float64 `json:"cov"`
	// Histories are the latest outcomes of every observed history (the outcomes that share all
	// dimensions but the time), sorted by label.
	Histories []History `json:"histories,omitempty"`
}

// KeyFit is one series' effect: its posterior mean, variance and covariance with w, and its
// support (distinct observations). Share is the series' summed design row of w divided by
// its count plus lambda_a (b_k / D_k below): the posterior covariance of two series' effects
// is Share_k' Cov Share_j, which a forecast conditioned on new outcomes needs.
type KeyFit struct {
	Level   string    `json:"level"`
	Effect  float64   `json:"effect"`
	Var     float64   `json:"var"`
	Cov     []float64 `json:"cov,omitempty"`
	Share   []float64 `json:"share,omitempty"`
	Support int       `json:"support"`
}

// FactorFit is one factor in the model: its spread between levels and its levels' effects.
type FactorFit struct {
	Dim    string     `json:"dim"`
	Tau    float64    `json:"tau"`
	Levels []LevelFit `json:"levels"`
}

// LevelFit is one factor level's effect and its place in w.
type LevelFit struct {
	Level  string  `json:"level"`
	Effect float64 `json:"effect"`
	Column int     `json:"column"`
}

// History is the latest outcomes of one point's dimensions but its time, oldest first.
type History struct {
	Label  string   `json:"label"`
	Recent []Recent `json:"recent"`
}

// Recent is one outcome as written: its time ("" without one) and value.
type Recent struct {
	Time  string `json:"time,omitempty"`
	Value string `json:"value"`
}

const (
	// recentShown bounds the outcomes kept per history for the advisory.
	recentShown = 3
	// probClamp keeps probabilities off 0 and 1 before the logit.
	probClamp = 0.001
)

// design is the model's layout: which terms it has and where their parameters sit.
type design struct {
	b       *Bindings
	trend   bool
	center  float64
	latest  float64
	keys    []string // observed key levels, sorted
	keyTerm bool
	factors []factorLayout
	s       int // length of w
}

type factorLayout struct {
	dim    string
	levels []string // sorted
	first  int      // column of levels[0] in w
}

// row is one observation in the design: its series (-1 for none), its sparse row of w, and
// its value on the link scale.
type row struct {
	key  int
	cols []int
	vals []float64
	z    float64
}

// fit fits the model to obs (distinct, at least one). It is nil when the data defeat floating
// point (the estimation gives up, or a parameter comes out infinite or NaN): no fit is better
// than a forecast of NaN.
func fit(b *Bindings, obs []observation) *Fit {
	d := layout(b, obs)
	m := newMixed(d, d.rows(obs))
	est, steps, ok := m.estimate(sigmaFloor(b.Family, obs))
	if !ok {
		return nil
	}
	f := m.report(est, obs)
	if f == nil || !f.finite() {
		return nil
	}
	f.Iterations = steps
	return f
}

// finite reports whether every number of f is finite.
func (f *Fit) finite() bool {
	nums := []float64{f.Mu, f.Beta, f.TimeCenter, f.Latest, f.Sigma, f.KeyTau}
	for _, k := range f.Keys {
		nums = append(append(append(nums, k.Effect, k.Var), k.Cov...), k.Share...)
	}
	for _, ff := range f.Factors {
		nums = append(nums, ff.Tau)
		for _, l := range ff.Levels {
			nums = append(nums, l.Effect)
		}
	}
	for _, r := range f.Cov {
		nums = append(nums, r...)
	}
	return !slices.ContainsFunc(nums, func(x float64) bool { return !finite(x) })
}

// report is the fit of obs at the variance components est: the effects' posterior means and
// covariances, and what the advisory shows; nil when the equations at est have no solution.
func (m *mixed) report(est variances, obs []observation) *Fit {
	d, b := m.d, m.d.b
	f := &Fit{
		Family: b.Family, Observations: len(obs),
		Trend: d.trend, TimeCenter: d.center, Latest: d.latest,
		Sigma: math.Sqrt(est.sigma2), KeyTerm: d.keyTerm,
	}
	sol, ok := m.solve(est)
	if !ok {
		return nil
	}
	f.Mu = sol.w[0]
	if d.trend {
		f.Beta = sol.w[1]
	}
	if d.keyTerm {
		f.KeyTau = math.Sqrt(est.tauA2)
	}
	f.Keys = m.keyFits(sol, est.sigma2, obs)
	for j, fl := range d.factors {
		ff := FactorFit{Dim: fl.dim, Tau: math.Sqrt(est.tauF2[j])}
		for i, lv := range fl.levels {
			ff.Levels = append(ff.Levels, LevelFit{Level: lv, Effect: sol.w[fl.first+i], Column: fl.first + i})
		}
		f.Factors = append(f.Factors, ff)
	}
	f.Cov = make([][]float64, d.s)
	for i := range f.Cov {
		f.Cov[i] = make([]float64, d.s)
		for j := range f.Cov[i] {
			f.Cov[i][j] = est.sigma2 * sol.sinv.At(i, j)
		}
	}
	f.Histories = histories(b, obs)
	return f
}

// layout reads the terms off the observations: the trend when 3 or more distinct times occur,
// the key and each factor when 2 or more levels occur.
func layout(b *Bindings, obs []observation) *design {
	d := &design{b: b, s: 1}
	var times []float64
	for _, o := range obs {
		if o.timed {
			times = append(times, o.t)
		}
	}
	if len(times) > 0 {
		d.latest = slices.Max(times)
		sum := 0.0
		for _, t := range times {
			sum += t
		}
		d.center = sum / float64(len(times))
		distinct := slices.Clone(times)
		slices.Sort(distinct)
		d.trend = len(slices.Compact(distinct)) >= 3
	}
	if d.trend {
		d.s++
	}
	d.keys = levels(b.Key, obs)
	d.keyTerm = len(d.keys) >= 2
	for _, f := range b.Factors {
		if lv := levels(f, obs); len(lv) >= 2 {
			d.factors = append(d.factors, factorLayout{dim: f, levels: lv, first: d.s})
			d.s += len(lv)
		}
	}
	return d
}

// levels lists the values dim takes in obs, sorted ("" dim: none).
func levels(dim string, obs []observation) []string {
	if dim == "" {
		return nil
	}
	var lv []string
	for _, o := range obs {
		if v, ok := o.Dims[dim]; ok {
			lv = append(lv, v)
		}
	}
	slices.Sort(lv)
	return slices.Compact(lv)
}

// timeOf is the numeric time of dims, if the time dimension is bound and given.
func timeOf(b *Bindings, dims map[string]string) (float64, bool) {
	if b.Time == "" {
		return 0, false
	}
	v, ok := dims[b.Time]
	if !ok {
		return 0, false
	}
	t, err := numeric.Float(numeric.Number(v))
	return t, err == nil
}

// rows puts the observations in the design.
func (d *design) rows(obs []observation) []row {
	rows := make([]row, len(obs))
	for i, o := range obs {
		r := row{key: -1, cols: []int{0}, vals: []float64{1}, z: link(d.b.Family, o.y)}
		if d.trend {
			t := d.center
			if o.timed {
				t = o.t
			}
			r.cols, r.vals = append(r.cols, 1), append(r.vals, t-d.center)
		}
		if v, ok := o.Dims[d.b.Key]; ok && d.keyTerm {
			r.key, _ = slices.BinarySearch(d.keys, v)
		}
		for _, f := range d.factors {
			if j, ok := slices.BinarySearch(f.levels, o.Dims[f.dim]); ok {
				r.cols, r.vals = append(r.cols, f.first+j), append(r.vals, 1)
			}
		}
		rows[i] = r
	}
	return rows
}

// link maps an outcome to the model's scale.
func link(family string, y float64) float64 {
	switch family {
	case Positive:
		return math.Log(y)
	case Count:
		return math.Log(y + 0.5)
	case Probability:
		p := min(max(y, probClamp), 1-probClamp)
		return math.Log(p / (1 - p))
	}
	return y
}

// inverse maps a predictor back to the outcome scale, with the slope of that map there.
func inverse(family string, eta float64) (y, slope float64) {
	switch family {
	case Positive:
		y = math.Exp(eta)
		return y, y
	case Count:
		e := math.Exp(eta)
		return max(e-0.5, 0), e
	case Probability:
		p := 1 / (1 + math.Exp(-eta))
		return p, p * (1 - p)
	}
	return eta, 1
}

// sigmaFloor is the least noise sd on the link scale: the rounding error of the finest value
// as written (a uniform spread over one unit of its last digit), carried to the link scale at
// the median outcome.
func sigmaFloor(family string, obs []observation) float64 {
	resolution := math.Inf(1)
	ys := make([]float64, len(obs))
	for i, o := range obs {
		resolution = min(resolution, math.Pow(10, -float64(decimals(string(o.Value)))))
		ys[i] = o.y
	}
	slices.Sort(ys)
	y := ys[len(ys)/2]
	// The link's slope at y is 1/scale; dividing by scale (rather than multiplying by the
	// slope) keeps a tiny positive value's floor finite: 1e-320 written so has resolution
	// 1e-320, and 1/1e-320 would overflow.
	scale := 1.0
	switch family {
	case Positive:
		scale = y
	case Count:
		scale = y + 0.5
	case Probability:
		p := min(max(y, probClamp), 1-probClamp)
		scale = p * (1 - p)
	}
	return max(resolution/scale/math.Sqrt(12), 1e-9)
}

// decimals is the place of a literal's last digit: 2 for 118.45, 0 for 120, -2 for 1.2e3.
func decimals(literal string) int {
	mantissa, exp := strings.ToLower(literal), 0
	if i := strings.IndexByte(mantissa, 'e'); i >= 0 {
		for _, c := range strings.TrimLeft(mantissa[i+1:], "+-") {
			exp = exp*10 + int(c-'0')
		}
		if strings.HasPrefix(mantissa[i+1:], "-") {
			exp = -exp
		}
		mantissa = mantissa[:i]
	}
	n := 0
	if i := strings.IndexByte(mantissa, '.'); i >= 0 {
		n = len(mantissa) - i - 1
	}
	return n - exp
}

// histories groups the observations by their dimensions but time and keeps each group's latest
// outcomes, ordered by time and then by event.
func histories(b *Bindings, obs []observation) []History {
	order := make([]*observation, len(obs))
	for i := range obs {
		order[i] = &obs[i]
	}
	slices.SortFunc(order, func(p, q *observation) int {
		return cmp.Or(strings.Compare(p.history, q.history), cmp.Compare(p.t, q.t), cmp.Compare(p.Index, q.Index), cmp.Compare(p.Order, q.Order), strings.Compare(p.point, q.point))
	})
	var out []History
	for from := 0; from < len(order); {
		to := from + 1
		for to < len(order) && order[to].history == order[from].history {
			to++
		}
		s := History{Label: order[from].history}
		for _, o := range order[max(from, to-recentShown):to] {
			s.Recent = append(s.Recent, Recent{Time: o.Dims[b.Time], Value: string(o.Value)})
		}
		out = append(out, s)
		from = to
	}
	return out
}

// historyLabel is the key of dims without its time: the history a point belongs to.
func historyLabel(b *Bindings, dims map[string]string) string {
	rest := make(map[string]string, len(dims))
	for n, v := range dims {
		if n != b.Time {
			rest[n] = v
		}
	}
	return numeric.Key{Target: b.Target, Dims: rest}.String()
}
