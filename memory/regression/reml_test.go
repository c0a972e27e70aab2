package regression

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestREMLMaximum checks the EM estimates against the restricted likelihood computed the long
// way, with the full n x n covariance V = sigma^2 I + tau_a^2 Z_a Z_a' + tau_f^2 Z_f Z_f':
// moving any variance component away from its estimate must lower it.
func TestREMLMaximum(t *testing.T) {
	w := newWorld(11, 8, 6)
	train := w.panel(1, 6)
	d := ingest(t, salesBindings, train)
	f := d.Fit
	obs := observations(d.Bindings, d.Records)
	n := len(obs)
	x := mat.NewDense(n, 2, nil) // mu and the centred week
	za := mat.NewDense(n, len(f.Keys), nil)
	zf := mat.NewDense(n, 2, nil)
	y := mat.NewVecDense(n, nil)
	for i, o := range obs {
		week, _ := timeOf(d.Bindings, o.Dims)
		x.Set(i, 0, 1)
		x.Set(i, 1, week-f.TimeCenter)
		za.Set(i, storeIndex(t, o.Dims["store"]), 1)
		if o.Dims["channel"] == "online" {
			zf.Set(i, 0, 1)
		} else {
			zf.Set(i, 1, 1)
		}
		y.SetVec(i, o.y)
	}
	reml := func(sigma2, tauA2, tauF2 float64) float64 {
		v := mat.NewSymDense(n, nil)
		for i := range n {
			for j := i; j < n; j++ {
				c := tauA2*mat.Dot(za.RowView(i), za.RowView(j)) + tauF2*mat.Dot(zf.RowView(i), zf.RowView(j))
				if i == j {
					c += sigma2
				}
				v.SetSym(i, j, c)
			}
		}
		var chol mat.Cholesky
		if !chol.Factorize(v) {
			t.Fatal("V is not positive definite")
		}
		var vix mat.Dense
		if err := chol.SolveTo(&vix, x); err != nil {
			t.Fatal(err)
		}
		var xvx mat.Dense
		xvx.Mul(x.T(), &vix)
		var xvy, beta mat.VecDense
		xvy.MulVec(vix.T(), y)
		if err := beta.SolveVec(&xvx, &xvy); err != nil {
			t.Fatal(err)
		}
		var r mat.VecDense
		r.MulVec(x, &beta)
		r.SubVec(y, &r)
		var vir mat.VecDense
		if err := chol.SolveVecTo(&vir, &r); err != nil {
			t.Fatal(err)
		}
		return -0.5 * (chol.LogDet() + math.Log(mat.Det(&xvx)) + mat.Dot(&r, &vir))
	}
	s2, a2, f2 := f.Sigma*f.Sigma, f.KeyTau*f.KeyTau, f.Factors[0].Tau*f.Factors[0].Tau
	best := reml(s2, a2, f2)
	for _, m := range []float64{0.99, 1.01} {
		for name, l := range map[string]float64{
			"sigma^2": reml(s2*m, a2, f2), "tau_a^2": reml(s2, a2*m, f2), "tau_f^2": reml(s2, a2, f2*m),
		} {
			if l >= best {
				t.Errorf("%s times %.2f: REML %.6f, not below the estimate's %.6f", name, m, l, best)
			}
		}
	}
}
