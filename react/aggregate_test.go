package react

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestNaive checks Naive against Σ p_t Ŵ_t with Ŵ_t solved by LU from raw
// samples, and that it differs from W_p in general.
func TestNaive(t *testing.T) {
	samples := threeTasks(60, 5, 30, 12, 80)
	tasks := names(samples)
	c := components(t, 0.1, NormSum, samples...)
	s := mustSolver(t, c, DefaultOptions(c))
	p := mustPref(t, "task0=0.5,task1=0.2,task2=0.3", tasks)
	got, err := s.Naive(p)
	if err != nil {
		t.Fatal(err)
	}
	want := mat.NewDense(5, 5, nil)
	for k := range samples {
		w := make([]float64, len(samples))
		w[k] = 1
		ap, cp := refSystem(t, 0.1, NormSum, w, samples...)
		var wt, term mat.Dense
		if err := wt.Solve(cp, ap.T()); err != nil {
			t.Fatal(err)
		}
		term.Scale(p.Weights()[k], wt.T())
		want.Add(want, &term)
	}
	assertClose(t, "naive", got, want, 1e-10)
	wp, _ := s.Solve(p)
	if relErr(got, wp) < 1e-6 {
		t.Error("naive aggregation equals W_p; the test data do not separate them")
	}
}

// TestPolar checks the polar aggregation: one-hot gives Ŵ_t back; with a
// shared rotation R the result is R Σ p_t P_t; in general the rotation
// factor of the result is orthogonal and its stretch is Σ p_t P_t.
func TestPolar(t *testing.T) {
	samples := threeTasks(61, 4, 30, 40, 50)
	tasks := names(samples)
	c := components(t, 0.1, NormSum, samples...)
	s := mustSolver(t, c, DefaultOptions(c))
	for _, task := range tasks {
		p, _ := OneHot(tasks, task)
		got, err := s.Polar(p)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := s.Single(task)
		assertClose(t, "polar one-hot "+task, got, want, 1e-10)
	}

	p := mustPref(t, "task0=0.5,task1=0.25,task2=0.25", tasks)
	got, err := s.Polar(p)
	if err != nil {
		t.Fatal(err)
	}
	// Independent stretch: P_t = (Ŵ_tᵀ Ŵ_t)^(1/2) via a symmetric
	// eigendecomposition, P̄ = Σ p_t P_t; and R̄ = got P̄⁻¹ must be orthogonal.
	pBar := mat.NewDense(4, 4, nil)
	rSum := mat.NewDense(4, 4, nil)
	for k, task := range tasks {
		w, _ := s.Single(task)
		var wtw mat.SymDense
		wtw.SymOuterK(1, w.T())
		var eig mat.EigenSym
		eig.Factorize(&wtw, true)
		vals := eig.Values(nil)
		var v mat.Dense
		eig.VectorsTo(&v)
		pt := mat.NewDense(4, 4, nil)
		for i := 0; i < 4; i++ {
			for j := 0; j < 4; j++ {
				x := 0.0
				for l := 0; l < 4; l++ {
					x += v.At(i, l) * v.At(j, l) * math.Sqrt(math.Max(0, vals[l]))
				}
				pt.Set(i, j, x)
			}
		}
		var rt mat.Dense // R_t = Ŵ_t P_t⁻¹
		if err := rt.Solve(pt.T(), w.T()); err != nil {
			t.Fatal(err)
		}
		var term mat.Dense
		term.Scale(p.Weights()[k], pt)
		pBar.Add(pBar, &term)
		term.Scale(p.Weights()[k], rt.T())
		rSum.Add(rSum, &term)
	}
	var rBar mat.Dense
	if err := rBar.Solve(pBar.T(), got.T()); err != nil {
		t.Fatal(err)
	}
	r := mat.DenseCopyOf(rBar.T())
	assertOrthogonal(t, r)
	assertClose(t, "averaged rotation vs polar factor of Σ p_t R_t", r, orthRef(t, rSum), 1e-9)

	// Shared rotation: Ŵ_t = R P_t exactly is not available from data, so
	// check polarFactors directly on R P with a known R and P.
	rng := rand.New(rand.NewPCG(62, 1))
	q := randomOrthogonal(rng, 4)
	b := mat.NewDense(4, 4, nil)
	for i := 0; i < 4; i++ {
		for j := 0; j < 4; j++ {
			b.Set(i, j, rng.NormFloat64())
		}
	}
	var spd, m mat.Dense
	spd.Mul(b.T(), b)
	m.Mul(q, &spd)
	rf, pf, err := polarFactors(&m)
	if err != nil {
		t.Fatal(err)
	}
	assertClose(t, "polar rotation", rf, q, 1e-9)
	assertClose(t, "polar stretch", pf, &spd, 1e-9)
}
