package baseline

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/internal/mattest"
	"github.com/mergectl/react-triton/react/internal/reacttest"
)

// TestNaive checks Naive against Σ p_t Ŵ_t with Ŵ_t solved by LU from raw
// samples, a task the preference leaves out weighing nothing, and that it
// differs from W_p in general.
func TestNaive(t *testing.T) {
	samples := mattest.Samples(60, 5, 30, 12, 80)
	tasks := mattest.Names(samples)
	c := reacttest.FromSamples(t, 0.1, react.NormSum, samples...)
	s := reacttest.Solver(t, c, react.DefaultOptions(c))
	for _, spec := range []string{"task0=0.5,task1=0.2,task2=0.3", "task0=0.7,task2=0.3"} {
		p := reacttest.Preference(t, spec, tasks)
		got, err := Naive(s, p)
		if err != nil {
			t.Fatal(err)
		}
		want := mat.NewDense(5, 5, nil)
		for k := range samples {
			w := make([]float64, len(samples))
			w[k] = 1
			ap, cp := mattest.RefSystem(t, 0.1, false, w, samples...)
			var wt, term mat.Dense
			if err := wt.Solve(cp, ap.T()); err != nil {
				t.Fatal(err)
			}
			term.Scale(p.Weights()[k], wt.T())
			want.Add(want, &term)
		}
		mattest.AssertClose(t, "naive "+spec, got, want, 1e-10)
		wp, _ := s.Solve(p)
		if mattest.RelErr(got, wp) < 1e-6 {
			t.Errorf("%s: naive aggregation equals W_p; the test data do not separate them", spec)
		}
	}
}

// TestPolar checks the polar aggregation: one-hot gives Ŵ_t back; with a
// shared rotation R the result is R Σ p_t P_t; in general the rotation
// factor of the result is orthogonal and its stretch is Σ p_t P_t.
func TestPolar(t *testing.T) {
	samples := mattest.Samples(61, 4, 30, 40, 50)
	tasks := mattest.Names(samples)
	c := reacttest.FromSamples(t, 0.1, react.NormSum, samples...)
	s := reacttest.Solver(t, c, react.DefaultOptions(c))
	for _, task := range tasks {
		p, _ := react.OneHot(tasks, task)
		got, err := Polar(s, p)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := s.Single(task)
		mattest.AssertClose(t, "polar one-hot "+task, got, want, 1e-10)
	}

	p := reacttest.Preference(t, "task0=0.5,task1=0.25,task2=0.25", tasks)
	got, err := Polar(s, p)
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
	mattest.AssertOrthogonal(t, r)
	mattest.AssertClose(t, "averaged rotation vs polar factor of Σ p_t R_t", r, mattest.OrthRef(t, rSum), 1e-9)

	// Shared rotation: Ŵ_t = R P_t exactly is not available from data, so
	// check polarFactors directly on R P with a known R and P.
	rng := rand.New(rand.NewPCG(62, 1))
	q := mattest.RandomOrthogonal(rng, 4)
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
	mattest.AssertClose(t, "polar rotation", rf, q, 1e-9)
	mattest.AssertClose(t, "polar stretch", pf, &spd, 1e-9)
}
