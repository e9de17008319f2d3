package react

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestOneHotIsSingle checks that a one-hot preference gives exactly Ŵ_t, and
// that Ŵ_t matches (S'_t + β W_orth_t)(G'_t + β I)⁻¹ computed from the raw
// samples with an LU solve.
func TestOneHotIsSingle(t *testing.T) {
	samples := threeTasks(1, 6, 40, 9, 200)
	for _, norm := range []Normalization{NormSum, NormMean} {
		for _, beta := range []float64{0.1, 3} {
			c := components(t, beta, norm, samples...)
			s := mustSolver(t, c, Options{Beta: beta, Normalization: norm})
			for k, task := range s.Tasks() {
				p, err := OneHot(s.Tasks(), task)
				if err != nil {
					t.Fatal(err)
				}
				got, err := s.Solve(p)
				if err != nil {
					t.Fatal(err)
				}
				single, err := s.Single(task)
				if err != nil {
					t.Fatal(err)
				}
				if !mat.Equal(got, single) {
					t.Errorf("%s β=%g %s: Solve(one-hot) differs from Single", norm, beta, task)
				}
				w := make([]float64, len(samples))
				w[k] = 1
				ap, cp := refSystem(t, beta, norm, w, samples...)
				// W C = A  ⇔  C Wᵀ = Aᵀ (C symmetric), solved by LU.
				var wt mat.Dense
				if err := wt.Solve(cp, ap.T()); err != nil {
					t.Fatal(err)
				}
				assertClose(t, string(norm)+" "+task+" Ŵ_t vs LU reference", single, wt.T(), 1e-10)
			}
		}
	}
}

// TestSolveMatchesReferences compares W_p with two independent solutions of
// the normal equations W C_p = A_p built from raw samples: an LU solve of the
// transposed system, and, for this small D, the Kronecker (vec) form
// (C_p ⊗ I) vec(W) = vec(A_p) solved as one D²×D² system.
func TestSolveMatchesReferences(t *testing.T) {
	samples := threeTasks(2, 5, 30, 12, 80)
	tasks := names(samples)
	for _, tc := range []struct {
		spec string
		beta float64
		norm Normalization
	}{
		{"task0=1,task1=1,task2=1", 0.1, NormSum},
		{"task0=0.7,task2=0.3", 0.1, NormSum},
		{"task1=0.2,task2=0.5,task0=0.3", 2, NormSum},
		{"task0=1,task1=3", 1e-3, NormMean},
		{"task0=0.5,task1=0.25,task2=0.25", 0, NormSum},
		{"task2=1", 0, NormMean},
	} {
		c := components(t, tc.beta, tc.norm, samples...)
		s := mustSolver(t, c, DefaultOptions(c))
		p := mustPref(t, tc.spec, tasks)
		got, err := s.Solve(p)
		if err != nil {
			t.Fatalf("%s: %v", tc.spec, err)
		}
		ap, cp := refSystem(t, tc.beta, tc.norm, p.Weights(), samples...)

		var wt mat.Dense
		if err := wt.Solve(cp, ap.T()); err != nil {
			t.Fatal(err)
		}
		assertClose(t, tc.spec+" vs LU", got, wt.T(), 1e-10)

		d := c.D
		// Unknown W_ik sits at index i*d+k; equation (i,j): Σ_k W_ik C_kj = A_ij.
		kron := mat.NewDense(d*d, d*d, nil)
		rhs := mat.NewVecDense(d*d, nil)
		for i := 0; i < d; i++ {
			for j := 0; j < d; j++ {
				for k := 0; k < d; k++ {
					kron.Set(i*d+j, i*d+k, cp.At(k, j))
				}
				rhs.SetVec(i*d+j, ap.At(i, j))
			}
		}
		var vec mat.VecDense
		if err := vec.SolveVec(kron, rhs); err != nil {
			t.Fatal(err)
		}
		assertClose(t, tc.spec+" vs Kronecker", got, mat.NewDense(d, d, vec.RawVector().Data), 1e-10)
	}
}

// lossP returns Σ p_t L_t(W) from raw samples, with
// L_t(W) = ‖W Z_mtl − Z_ind‖²/n' + β‖W − W_orth_t‖², n' = 1 for sums and N_t
// for means.
func lossP(w *mat.Dense, p []float64, beta float64, norm Normalization, orth []*mat.Dense, samples []sample) float64 {
	total := 0.0
	d := w.RawMatrix().Rows
	for k, s := range samples {
		if p[k] == 0 {
			continue
		}
		fit := 0.0
		for r := 0; r < s.N; r++ {
			for i := 0; i < d; i++ {
				v := -s.Ind[r*d+i]
				for j := 0; j < d; j++ {
					v += w.At(i, j) * s.MTL[r*d+j]
				}
				fit += v * v
			}
		}
		if norm == NormMean {
			fit /= float64(s.N)
		}
		reg := 0.0
		for i := 0; i < d; i++ {
			for j := 0; j < d; j++ {
				x := w.At(i, j) - orth[k].At(i, j)
				reg += x * x
			}
		}
		total += p[k] * (fit + beta*reg)
	}
	return total
}

// TestStationarity checks that the gradient of Σ p_t L_t(W), computed from
// the raw samples by central finite differences, vanishes at W_p. The loss
// is quadratic, so central differences are exact up to rounding; the
// gradient at W_p is compared with the gradient scale at W = 0.
func TestStationarity(t *testing.T) {
	samples := threeTasks(3, 4, 25, 6, 60)
	tasks := names(samples)
	rng := rand.New(rand.NewPCG(3, 3))
	orth := make([]*mat.Dense, len(samples))
	for k, s := range samples {
		orth[k] = orthRef(t, s.RawS())
	}
	for _, tc := range []struct {
		spec string
		beta float64
		norm Normalization
	}{
		{"task0=1,task1=1,task2=1", 0.1, NormSum},
		{"task0=0.2,task1=0.8", 5, NormSum},
		{"task1=0.6,task2=0.4", 1e-3, NormMean},
		{"task0=0.1,task1=0.1,task2=0.8", 0.5, NormMean},
	} {
		c := components(t, tc.beta, tc.norm, samples...)
		s := mustSolver(t, c, DefaultOptions(c))
		p := mustPref(t, tc.spec, tasks)
		wp, err := s.Solve(p)
		if err != nil {
			t.Fatal(err)
		}
		pw := p.Weights()
		grad := func(w *mat.Dense, i, j int) float64 {
			const h = 1e-3
			x := w.At(i, j)
			w.Set(i, j, x+h)
			up := lossP(w, pw, tc.beta, tc.norm, orth, samples)
			w.Set(i, j, x-h)
			down := lossP(w, pw, tc.beta, tc.norm, orth, samples)
			w.Set(i, j, x)
			return (up - down) / (2 * h)
		}
		zero := mat.NewDense(c.D, c.D, nil)
		for trial := 0; trial < 6; trial++ {
			i, j := rng.IntN(c.D), rng.IntN(c.D)
			scale := math.Abs(grad(zero, i, j)) + 1
			if g := grad(wp, i, j); math.Abs(g) > 1e-7*scale {
				t.Errorf("%s: ∂L/∂W[%d,%d] at W_p = %.3g, gradient scale %.3g", tc.spec, i, j, g, scale)
			}
			// The test must be able to fail: a perturbed W_p is not stationary.
			wp.Set(i, j, wp.At(i, j)+0.01)
			if g := grad(wp, i, j); math.Abs(g) < 1e-5*scale {
				t.Errorf("%s: perturbed W_p still looks stationary (%.3g)", tc.spec, g)
			}
			wp.Set(i, j, wp.At(i, j)-0.01)
		}
	}
}

// TestLargeBetaLimit checks that W_p → Σ p_t W_orth_t as β → ∞, with an
// error that shrinks like 1/β.
func TestLargeBetaLimit(t *testing.T) {
	samples := threeTasks(4, 5, 40, 20, 70)
	tasks := names(samples)
	p := mustPref(t, "task0=0.5,task1=0.3,task2=0.2", tasks)
	limit := mat.NewDense(5, 5, nil)
	for k, s := range samples {
		var w mat.Dense
		w.Scale(p.Weights()[k], orthRef(t, s.RawS()))
		limit.Add(limit, &w)
	}
	var prev float64
	for i, beta := range []float64{1e3, 1e4, 1e5, 1e6} {
		c := components(t, beta, NormSum, samples...)
		wp, err := mustSolver(t, c, DefaultOptions(c)).Solve(p)
		if err != nil {
			t.Fatal(err)
		}
		e := relErr(wp, limit)
		if i > 0 {
			if ratio := prev / e; ratio < 8 || ratio > 12 {
				t.Errorf("β=%g: error %.3g, previous %.3g: ratio %.3g, want ≈ 10 (error ∝ 1/β)", beta, e, prev, ratio)
			}
		}
		prev = e
	}
	if prev > 1e-3 {
		t.Errorf("β=1e6: W_p is %.3g from Σ p_t W_orth_t", prev)
	}
}

// TestLeastSquares checks that with β = 0 and N ≫ D, Ŵ_t is the
// least-squares map computed from the raw samples by QR, and that it
// recovers M exactly when Z_ind = M Z_mtl.
func TestLeastSquares(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	const d = 6
	noisy := randomSample(rng, "noisy", 500, d, 0.5)
	exact := randomSample(rng, "exact", 300, d, 0)
	c := components(t, 0, NormSum, noisy, exact)
	s := mustSolver(t, c, DefaultOptions(c))

	zm, zi := noisy.ZRows()
	var wt mat.Dense // Z_mtl_rows Wᵀ ≈ Z_ind_rows, solved by QR
	if err := wt.Solve(zm, zi); err != nil {
		t.Fatal(err)
	}
	got, err := s.Single("noisy")
	if err != nil {
		t.Fatal(err)
	}
	assertClose(t, "β=0 vs least squares", got, wt.T(), 1e-10)

	// Noise-free samples: Ŵ_t recovers the M they were drawn from.
	got, err = s.Single("exact")
	if err != nil {
		t.Fatal(err)
	}
	assertClose(t, "β=0 recovers M", got, exact.M, 1e-10)
}

// TestMeanSumIdentity checks that with equal N across tasks the
// mean-normalised W_p at β equals the sum-normalised W_p at β·N.
func TestMeanSumIdentity(t *testing.T) {
	const n = 37
	samples := threeTasks(6, 5, n, n, n)
	tasks := names(samples)
	for _, spec := range []string{"task0=1,task1=2,task2=3", "task1=1", "task0=0.5,task2=0.5"} {
		p := mustPref(t, spec, tasks)
		for _, beta := range []float64{1e-3, 0.1, 2} {
			cm := components(t, beta, NormMean, samples...)
			mean, err := mustSolver(t, cm, DefaultOptions(cm)).Solve(p)
			if err != nil {
				t.Fatal(err)
			}
			cs := components(t, beta*n, NormSum, samples...)
			sum, err := mustSolver(t, cs, DefaultOptions(cs)).Solve(p)
			if err != nil {
				t.Fatal(err)
			}
			assertClose(t, spec, mean, sum, 1e-12)
		}
	}
}

// TestSingularNeedsBeta checks that β = 0 with fewer samples than D gives a
// *SolveError that explains what to do, not a matrix, and that β > 0 fixes it.
func TestSingularNeedsBeta(t *testing.T) {
	samples := threeTasks(7, 8, 5, 100)
	tasks := names(samples)
	c := components(t, 0, NormSum, samples...)
	s := mustSolver(t, c, DefaultOptions(c))
	w, err := s.Single("task0")
	var se *SolveError
	if !errors.As(err, &se) {
		t.Fatalf("Single(task0) with N=5 < D=8, β=0: got %v, %v; want a *SolveError", w, err)
	}
	if w != nil {
		t.Error("Single returned a matrix along with the error")
	}
	for _, want := range []string{"β=0", "task task0 has N=5, D=8", "use β > 0"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	// Solve with the same one-hot preference behaves the same.
	if _, err := s.Solve(mustPref(t, "task0=1", tasks)); !errors.As(err, &se) {
		t.Errorf("Solve(task0=1): got %v, want a *SolveError", err)
	}
	// Mixed with a well-sampled task, C_p is positive definite.
	if _, err := s.Solve(mustPref(t, "task0=0.5,task1=0.5", tasks)); err != nil {
		t.Errorf("Solve(task0=0.5,task1=0.5): %v", err)
	}
	// A positive β makes it solvable.
	s2 := mustSolver(t, c, Options{Beta: 0.1, Normalization: NormSum})
	if _, err := s2.Single("task0"); err != nil {
		t.Errorf("β=0.1: %v", err)
	}
	// A tiny β with the mean normalisation is still refused, asking for more.
	s3 := mustSolver(t, c, Options{Beta: 1e-300, Normalization: NormMean})
	if _, err := s3.Single("task0"); !errors.As(err, &se) || !strings.Contains(err.Error(), "increase β") {
		t.Errorf("β=1e-300: got %v, want a *SolveError asking to increase β", err)
	}
}

// TestCondition compares Condition with the singular values of C_t.
func TestCondition(t *testing.T) {
	samples := threeTasks(8, 6, 50, 10)
	c := components(t, 0.5, NormMean, samples...)
	s := mustSolver(t, c, DefaultOptions(c))
	for _, smp := range samples {
		g := smp.RawG()
		g.Scale(1/float64(smp.N), g)
		for i := 0; i < 6; i++ {
			g.Set(i, i, g.At(i, i)+0.5)
		}
		var svd mat.SVD
		if !svd.Factorize(g, mat.SVDNone) {
			t.Fatal("svd failed")
		}
		want := svd.Cond()
		got, err := s.Condition(smp.Name)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-want) > 1e-9*want {
			t.Errorf("Condition(%s) = %v, want %v", smp.Name, got, want)
		}
	}
	if _, err := s.Condition("nope"); err == nil {
		t.Error("Condition(unknown task) succeeded")
	}
	c0 := components(t, 0, NormSum, threeTasks(8, 6, 3)...)
	if got, err := mustSolver(t, c0, DefaultOptions(c0)).Condition("task0"); err != nil || got < 1e12 {
		t.Errorf("Condition of a rank-3 6×6 Gram matrix = %v, %v; want huge or +Inf", got, err)
	}
}

// TestSolverValidation checks the errors of NewSolver and SolveInto.
func TestSolverValidation(t *testing.T) {
	samples := threeTasks(9, 3, 10, 10)
	c := components(t, 0.1, NormSum, samples...)
	for _, opt := range []Options{
		{Beta: -1, Normalization: NormSum},
		{Beta: math.NaN(), Normalization: NormSum},
		{Beta: math.Inf(1), Normalization: NormSum},
		{Beta: 1, Normalization: "median"},
	} {
		if _, err := NewSolver(c, opt); err == nil {
			t.Errorf("NewSolver(%+v) succeeded", opt)
		}
	}
	if _, err := NewSolver(&Components{D: 3}, Options{Normalization: NormSum}); err == nil {
		t.Error("NewSolver(no tasks) succeeded")
	}
	if _, err := NewSolver(nil, Options{}); err == nil {
		t.Error("NewSolver(nil) succeeded")
	}
	s := mustSolver(t, c, DefaultOptions(c))
	if err := s.SolveInto(mat.NewDense(2, 3, nil), Uniform(s.Tasks())); err == nil {
		t.Error("SolveInto(2×3 destination) succeeded")
	}
	if _, err := s.Solve(Preference{}); err == nil {
		t.Error("Solve(empty preference) succeeded")
	}
	other := mustPref(t, "cars=1", []string{"cars"})
	if _, err := s.Solve(other); err == nil || !strings.Contains(err.Error(), `unknown task "cars"`) {
		t.Errorf("Solve(preference over other tasks): %v", err)
	}
	if _, err := s.Single("cars"); err == nil {
		t.Error("Single(unknown) succeeded")
	}
	// A preference over a subset of the tasks, in another order, is fine.
	sub := mustPref(t, "task1=1", []string{"task1"})
	got, err := s.Solve(sub)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := s.Single("task1")
	if !mat.Equal(got, want) {
		t.Error("preference over a subset of tasks differs from Single")
	}
}

// TestSolveConcurrent checks that concurrent Solve calls give the same
// answers as sequential ones (run with -race to check for data races).
func TestSolveConcurrent(t *testing.T) {
	samples := threeTasks(10, 8, 30, 40, 50)
	tasks := names(samples)
	c := components(t, 0.1, NormSum, samples...)
	s := mustSolver(t, c, DefaultOptions(c))
	specs := []string{"task0=1", "task1=1,task2=1", "task0=0.2,task1=0.3,task2=0.5", "task2=1"}
	want := make([]*mat.Dense, len(specs))
	for i, spec := range specs {
		var err error
		if want[i], err = s.Solve(mustPref(t, spec, tasks)); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var dst mat.Dense
			for r := 0; r < 20; r++ {
				i := (g + r) % len(specs)
				p, _ := ParsePreference(specs[i], tasks)
				dst.Reset()
				if err := s.SolveInto(&dst, p); err != nil {
					errs <- err.Error()
					return
				}
				if !mat.Equal(&dst, want[i]) {
					errs <- "concurrent result differs for " + specs[i]
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestSolveIntoAllocs checks that SolveInto itself does not allocate in
// steady state. D is small enough that gonum's unblocked LAPACK paths run,
// which allocate nothing, so any allocation comes from the solver's code.
func TestSolveIntoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	samples := threeTasks(11, 16, 30, 40)
	c := components(t, 0.1, NormSum, samples...)
	s := mustSolver(t, c, DefaultOptions(c))
	p := Uniform(s.Tasks())
	dst := mat.NewDense(16, 16, nil)
	if err := s.SolveInto(dst, p); err != nil {
		t.Fatal(err)
	}
	// With OpenBLAS, gonum's netlib wrapper of Dpocon (the condition
	// estimate) allocates its two work arrays on each call; the solver's own
	// scratch stays pooled.
	want := 0.0
	if CPUBackend() == BackendOpenBLAS { // also beside cuda: the solver is the CPU's
		want = 2
	}
	if n := testing.AllocsPerRun(20, func() { _ = s.SolveInto(dst, p) }); n != want {
		t.Errorf("SolveInto allocates %v times per call with the %s backend (CPU: %s), want %v", n, CurrentBackend(), CPUBackend(), want)
	}
}

// TestIllConditioned checks the condition-number limit: a positive definite
// C_p with condition number 1e16 is refused with a finite Cond, one with
// 1e12 is solved.
func TestIllConditioned(t *testing.T) {
	for _, tc := range []struct {
		small  float64 // second sample's size: cond(G) = 1/small²
		refuse bool
	}{{1e-8, true}, {1e-6, false}} {
		s := sample{Name: "thin", N: 2, D: 2,
			MTL: []float64{1, 0, 0, tc.small},
			Ind: []float64{0, 1, tc.small, 0}}
		c := components(t, 0, NormSum, s)
		solver := mustSolver(t, c, DefaultOptions(c))
		w, err := solver.Single("thin")
		var se *SolveError
		switch {
		case tc.refuse && !errors.As(err, &se):
			t.Errorf("cond 1/%g²: got %v, %v; want a *SolveError", tc.small, w, err)
		case tc.refuse && (math.IsInf(se.Cond, 0) || se.Cond < MaxCondition || !strings.Contains(err.Error(), "too ill-conditioned")):
			t.Errorf("cond 1/%g²: error %v with Cond %v", tc.small, err, se.Cond)
		case !tc.refuse && err != nil:
			t.Errorf("cond 1/%g²: %v", tc.small, err)
		case !tc.refuse:
			// Z_ind = [[0,1],[1,0]] Z_mtl exactly.
			assertClose(t, "swap", w, mat.NewDense(2, 2, []float64{0, 1, 1, 0}), 1e-9)
		}
	}
}

// TestSolveStats checks the condition number SolveIntoStats reports: close
// to the true one, equal for Single and a one-hot Solve, compared with
// WarnCondition, and with the solution identical to SolveInto's.
func TestSolveStats(t *testing.T) {
	for _, tc := range []struct {
		small float64 // second sample's size: cond(C) = 1/small² at β = 0
		ill   bool    // whether cond > WarnCondition
	}{{1e-1, false}, {1e-3, false}, {1e-5, true}, {1e-6, true}} {
		s := sample{Name: "thin", N: 2, D: 2,
			MTL: []float64{1, 0, 0, tc.small},
			Ind: []float64{0, 1, tc.small, 0}}
		c := components(t, 0, NormSum, s)
		solver := mustSolver(t, c, DefaultOptions(c))
		want := 1 / (tc.small * tc.small) // diagonal C: every norm's κ agrees
		p := mustPref(t, "thin=1", solver.Tasks())
		dst := mat.NewDense(2, 2, nil)
		st, err := solver.SolveIntoStats(dst, p)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(st.Cond-want) > 1e-6*want {
			t.Errorf("cond 1/%g²: SolveIntoStats Cond = %v, want %v", tc.small, st.Cond, want)
		}
		if st.IllConditioned() != tc.ill {
			t.Errorf("cond %v: IllConditioned = %v, want %v (WarnCondition %v)", st.Cond, st.IllConditioned(), tc.ill, WarnCondition)
		}
		w, st1, err := solver.SingleStats("thin")
		if err != nil || st1 != st || !mat.Equal(w, dst) {
			t.Errorf("SingleStats = %v, %+v, %v; want %v, %+v", w, st1, err, dst, st)
		}
		plain, err := solver.Solve(p)
		if err != nil || !mat.Equal(plain, dst) {
			t.Errorf("Solve differs from SolveIntoStats: %v, %v", plain, err)
		}
	}
	// A refused solve still reports the estimate it refused.
	s := sample{Name: "thin", N: 2, D: 2, MTL: []float64{1, 0, 0, 1e-8}, Ind: []float64{0, 1, 1e-8, 0}}
	c := components(t, 0, NormSum, s)
	st, err := mustSolver(t, c, DefaultOptions(c)).SolveIntoStats(mat.NewDense(2, 2, nil), mustPref(t, "thin=1", []string{"thin"}))
	var se *SolveError
	if !errors.As(err, &se) || st.Cond != se.Cond || !(st.Cond > MaxCondition) {
		t.Errorf("refused solve: stats %+v, error %v", st, err)
	}
	if !(WarnCondition < MaxCondition) {
		t.Errorf("WarnCondition %v ≥ MaxCondition %v", WarnCondition, MaxCondition)
	}
}

// TestOneShotSolverAgrees: the one-shot solver, which reads S, W_orth and G
// at each solve, gives the precomputing solver's W_p, single-task
// corrections and factorisations, for both normalisations.
func TestOneShotSolverAgrees(t *testing.T) {
	samples := threeTasks(8, 20, 50, 70, 30)
	for _, norm := range []Normalization{NormSum, NormMean} {
		c := components(t, 0.2, norm, samples...)
		opt := Options{Beta: 0.05, Normalization: norm}
		full := mustSolver(t, c, opt)
		once, err := NewOneShotSolver(c, opt)
		if err != nil {
			t.Fatal(err)
		}
		for _, spec := range []string{"task0=1", "task0=1,task1=2", "task0=1,task1=1,task2=1"} {
			p := mustPref(t, spec, full.Tasks())
			a, err1 := full.Solve(p)
			b, err2 := once.Solve(p)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			assertClose(t, string(norm)+" "+spec, b, a, 1e-12)
			fa, _ := full.Factor(p)
			fb, _ := once.Factor(p)
			assertClose(t, string(norm)+" "+spec+" factored", fb.Form(), fa.Form(), 1e-12)
		}
		a, _ := full.Single("task2")
		b, _ := once.Single("task2")
		assertClose(t, string(norm)+" single", b, a, 1e-12)
	}
}
