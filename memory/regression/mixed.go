package regression

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"
)

const (
	// maxIterations bounds the EM steps; tolerance is the relative change of every variance
	// below which they have settled.
	maxIterations = 2000
	tolerance     = 1e-7
	// likelihoodTolerance is the relative gain of the likelihood over one accelerated cycle
	// below which the variances count as settled too: what is left to move is a direction in
	// which the data barely tell the variances apart, and the forecasts do not depend on it.
	likelihoodTolerance = 1e-12
	// maxJitters bounds the attempts to make the Schur complement positive definite by adding
	// to its diagonal; past them the variances at hand have no solution.
	maxJitters = 20
)

// mixed holds the sufficient statistics of the mixed model: per series its count, sum and
// summed design row; over all rows X'X, X'z and z'z for w.
type mixed struct {
	d     *design
	n     int
	zz    float64
	xx    *mat.SymDense
	xz    []float64
	count []float64   // per series
	sumZ  []float64   // per series
	bk    [][]float64 // per series: the sum of its rows of w's design
}

func newMixed(d *design, rows []row) *mixed {
	m := &mixed{d: d, n: len(rows), xx: mat.NewSymDense(d.s, nil), xz: make([]float64, d.s)}
	if d.keyTerm {
		m.count = make([]float64, len(d.keys))
		m.sumZ = make([]float64, len(d.keys))
		m.bk = make([][]float64, len(d.keys))
		for k := range m.bk {
			m.bk[k] = make([]float64, d.s)
		}
	}
	for _, r := range rows {
		m.zz += r.z * r.z
		for i, c := range r.cols {
			m.xz[c] += r.vals[i] * r.z
			for j, c2 := range r.cols {
				if c2 >= c {
					m.xx.SetSym(c, c2, m.xx.At(c, c2)+r.vals[i]*r.vals[j])
				}
			}
		}
		if r.key >= 0 {
			m.count[r.key]++
			m.sumZ[r.key] += r.z
			for i, c := range r.cols {
				m.bk[r.key][c] += r.vals[i]
			}
		}
	}
	return m
}

// variances are the variance components: noise, series, and one per factor in the model.
type variances struct {
	sigma2 float64
	tauA2  float64
	tauF2  []float64
}

// solution is the effects' posterior given the variances: w, the series effects a, the
// series block's diagonal D (count + lambda_a), the inverse of the Schur complement S, and
// what the likelihood needs: log|M| and theta'C'z.
type solution struct {
	w      []float64
	a      []float64
	diag   []float64
	sinv   *mat.SymDense
	logDet float64
	thetaR float64
}

// estimate finds the REML variances by EM from a start that splits the observed variance
// between the components, and returns them with the number of EM steps taken. With no more
// observations than fixed parameters the noise is its floor and the random effects vanish.
// It gives up (false) when the likelihood at an iterate is not a finite number: the equations
// could not be solved there, or the data overflow floating point.
//
// Plain EM crawls when a variance heads for zero (a factor that does not matter), so the
// steps are accelerated with SQUAREM (Varadhan and Roland, 2008): two EM steps give a
// direction in log-variance space, the runtime extrapolates along it, takes one EM step from
// there, and keeps the result only if the likelihood is no lower than after the two steps.
func (m *mixed) estimate(floor float64) (variances, int, bool) {
	f2 := floor * floor
	fixed := 1
	if m.d.trend {
		fixed++
	}
	spread := max(m.zz/float64(m.n)-sq(m.xz[0]/float64(m.n)), 0)
	lo := m.pack(m.uniform(f2, f2*1e-6))
	if m.n <= fixed {
		return m.unpack(lo), 0, true
	}
	hi := m.pack(m.uniform(1e6*(spread+f2), 1e6*(spread+f2)))
	x := m.pack(m.uniform(max(spread/2, f2), max(spread/2, f2*1e-6)))
	steps := 0
	em := func(x []float64) ([]float64, float64) {
		steps++
		v, ll := m.step(m.unpack(x))
		next := m.pack(v)
		for i := range next {
			next[i] = min(max(next[i], lo[i]), hi[i])
		}
		return next, ll
	}
	last := math.Inf(-1) // the likelihood at the start of the previous cycle
	for steps < maxIterations {
		x1, ll := em(x)
		if !finite(ll) {
			return variances{}, steps, false
		}
		if settled(x, x1) || ll-last < likelihoodTolerance*(1+math.Abs(ll)) {
			return m.unpack(x1), steps, true
		}
		last = ll
		x2, _ := em(x1)
		next := x2
		if xe, ok := extrapolate(x, x1, x2, lo, hi); ok {
			if x3, lle := em(xe); lle >= m.loglik(m.unpack(x2)) {
				next = x3
			}
		}
		x = next
	}
	return m.unpack(x), steps, true
}

// uniform is a start or bound with the noise variance at sigma2 and every other at tau2.
func (m *mixed) uniform(sigma2, tau2 float64) variances {
	v := variances{sigma2: sigma2, tauA2: tau2, tauF2: make([]float64, len(m.d.factors))}
	for j := range v.tauF2 {
		v.tauF2[j] = tau2
	}
	return v
}

// pack lists the variances the model estimates: sigma2, tauA2 with the key term, the tauF2.
func (m *mixed) pack(v variances) []float64 {
	x := []float64{v.sigma2}
	if m.d.keyTerm {
		x = append(x, v.tauA2)
	}
	return append(x, v.tauF2...)
}

func (m *mixed) unpack(x []float64) variances {
	v := variances{sigma2: x[0], tauA2: 1}
	x = x[1:]
	if m.d.keyTerm {
		v.tauA2, x = x[0], x[1:]
	}
	v.tauF2 = slices.Clone(x)
	return v
}

// extrapolate is SQUAREM's point from three successive EM iterates, in log space and within
// [lo, hi]; false when the iterates have stopped moving.
func extrapolate(x0, x1, x2, lo, hi []float64) ([]float64, bool) {
	var rr, vv float64
	r, v := make([]float64, len(x0)), make([]float64, len(x0))
	for i := range x0 {
		l0, l1, l2 := math.Log(x0[i]), math.Log(x1[i]), math.Log(x2[i])
		r[i], v[i] = l1-l0, l2-2*l1+l0
		rr += r[i] * r[i]
		vv += v[i] * v[i]
	}
	if vv == 0 {
		return nil, false
	}
	alpha := min(-math.Sqrt(rr/vv), -1)
	out := make([]float64, len(x0))
	for i := range x0 {
		out[i] = min(max(math.Exp(math.Log(x0[i])-2*alpha*r[i]+alpha*alpha*v[i]), lo[i]), hi[i])
	}
	return out, true
}

// settled reports whether every variance moved by less than tolerance (relative).
func settled(old, next []float64) bool {
	for i := range old {
		if math.Abs(next[i]-old[i]) > tolerance*old[i] {
			return false
		}
	}
	return true
}

func sq(x float64) float64 { return x * x }

// finite reports whether x is neither infinite nor NaN.
func finite(x float64) bool { return !math.IsInf(x, 0) && !math.IsNaN(x) }

// loglik is the restricted log-likelihood at v, up to a constant:
//
//	-1/2 [ (n - p_fixed) log sigma^2 + log|M| + sum_c q_c log(tau_c^2 / sigma^2) + (z'z - theta'C'z) / sigma^2 ]
//
// It is NaN where the equations at v have no solution.
func (m *mixed) loglik(v variances) float64 {
	sol, ok := m.solve(v)
	if !ok {
		return math.NaN()
	}
	return m.likelihood(v, sol)
}

// likelihood is loglik at v given its solution.
func (m *mixed) likelihood(v variances, sol solution) float64 {
	fixed := 1.0
	if m.d.trend {
		fixed++
	}
	l := (float64(m.n)-fixed)*math.Log(v.sigma2) + sol.logDet + (m.zz-sol.thetaR)/v.sigma2
	if m.d.keyTerm {
		l += float64(len(m.d.keys)) * math.Log(v.tauA2/v.sigma2)
	}
	for j, f := range m.d.factors {
		l += float64(len(f.levels)) * math.Log(v.tauF2[j]/v.sigma2)
	}
	return -l / 2
}

// step is one EM step: the variances that the expected complete-data likelihood at v favours,
// and the restricted log-likelihood at v (NaN, with v unchanged, where there is no solution).
func (m *mixed) step(v variances) (variances, float64) {
	sol, ok := m.solve(v)
	if !ok {
		return v, math.NaN()
	}
	d := m.d
	lambdaA := v.sigma2 / v.tauA2
	thetaLambda := 0.0
	next := variances{tauF2: make([]float64, len(d.factors))}
	p := float64(d.s)
	trace := p // tr(M^-1 C'C), less the penalties' share below
	if d.keyTerm {
		sumA2, trA := 0.0, 0.0
		tmp := mat.NewVecDense(d.s, nil)
		for k, a := range sol.a {
			sumA2 += a * a
			bk := mat.NewVecDense(d.s, m.bk[k])
			tmp.MulVec(sol.sinv, bk)
			trA += 1/sol.diag[k] + mat.Dot(bk, tmp)/sq(sol.diag[k])
		}
		thetaLambda += lambdaA * sumA2
		p += float64(len(sol.a))
		trace = p - lambdaA*trA
		next.tauA2 = (sumA2 + v.sigma2*trA) / float64(len(sol.a))
	}
	for j, f := range d.factors {
		lambda := v.sigma2 / v.tauF2[j]
		sumB2, trF := 0.0, 0.0
		for c := f.first; c < f.first+len(f.levels); c++ {
			sumB2 += sq(sol.w[c])
			trF += sol.sinv.At(c, c)
		}
		thetaLambda += lambda * sumB2
		trace -= lambda * trF
		next.tauF2[j] = (sumB2 + v.sigma2*trF) / float64(len(f.levels))
	}
	residual := max(m.zz-sol.thetaR-thetaLambda, 0)
	next.sigma2 = (residual + v.sigma2*trace) / float64(m.n)
	return next, m.likelihood(v, sol)
}

// solve solves the penalized normal equations at v through the Schur complement of the
// (diagonal) series block: S = X'X + Lambda_w - sum_k b_k b_k' / D_k. It fails (false) when S
// stays short of positive definite after maxJitters additions to its diagonal, as it does when
// anything in it is infinite or NaN.
func (m *mixed) solve(v variances) (solution, bool) {
	d := m.d
	s := mat.NewSymDense(d.s, nil)
	s.CopySym(m.xx)
	for j, f := range d.factors {
		lambda := v.sigma2 / v.tauF2[j]
		for c := f.first; c < f.first+len(f.levels); c++ {
			s.SetSym(c, c, s.At(c, c)+lambda)
		}
	}
	rhs := mat.NewVecDense(d.s, slices.Clone(m.xz))
	sol := solution{}
	if d.keyTerm {
		lambdaA := v.sigma2 / v.tauA2
		sol.diag = make([]float64, len(d.keys))
		for k := range d.keys {
			sol.diag[k] = m.count[k] + lambdaA
			bk := mat.NewVecDense(d.s, m.bk[k])
			s.SymRankOne(s, -1/sol.diag[k], bk)
			rhs.AddScaledVec(rhs, -m.sumZ[k]/sol.diag[k], bk)
		}
	}
	var chol mat.Cholesky
	for jitter, tries := 0.0, 0; !chol.Factorize(s); tries++ {
		if tries == maxJitters {
			return solution{}, false
		}
		// Rounding can leave S a hair short of positive definite when a penalty is huge.
		jitter = max(jitter*10, 1e-12*mat.Trace(s))
		for i := range d.s {
			s.SetSym(i, i, s.At(i, i)+jitter)
		}
	}
	w := mat.NewVecDense(d.s, nil)
	_ = chol.SolveVecTo(w, rhs)
	sol.w = w.RawVector().Data
	sol.sinv = mat.NewSymDense(d.s, nil)
	_ = chol.InverseTo(sol.sinv)
	sol.logDet = chol.LogDet()
	sol.thetaR = mat.Dot(w, mat.NewVecDense(d.s, m.xz))
	if d.keyTerm {
		sol.a = make([]float64, len(d.keys))
		for k := range d.keys {
			sol.a[k] = (m.sumZ[k] - mat.Dot(mat.NewVecDense(d.s, m.bk[k]), w)) / sol.diag[k]
			sol.logDet += math.Log(sol.diag[k])
			sol.thetaR += sol.a[k] * m.sumZ[k]
		}
	}
	return sol, true
}

// keyFits reports every observed series: its effect, posterior variance and covariance with w
// (scaled by sigma2), its share b_k / D_k, and its support.
func (m *mixed) keyFits(sol solution, sigma2 float64, obs []observation) []KeyFit {
	d := m.d
	fits := make([]KeyFit, len(d.keys))
	for k, lv := range d.keys {
		fits[k].Level = lv
	}
	for _, o := range obs {
		if k, ok := slices.BinarySearch(d.keys, o.Dims[d.b.Key]); ok && d.b.Key != "" {
			fits[k].Support++
		}
	}
	if !d.keyTerm {
		return fits
	}
	tmp := mat.NewVecDense(d.s, nil)
	for k := range fits {
		bk := mat.NewVecDense(d.s, m.bk[k])
		tmp.MulVec(sol.sinv, bk)
		dk := sol.diag[k]
		fits[k].Effect = sol.a[k]
		fits[k].Var = sigma2 * (1/dk + mat.Dot(bk, tmp)/sq(dk))
		fits[k].Cov = make([]float64, d.s)
		fits[k].Share = make([]float64, d.s)
		for i := range fits[k].Cov {
			fits[k].Cov[i] = -sigma2 * tmp.AtVec(i) / dk
			fits[k].Share[i] = m.bk[k][i] / dk
		}
	}
	return fits
}
