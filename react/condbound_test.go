package react

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// refCond is κ₁(C_p) of C_p = Σ w_t s_t G_t + β Σ w I, formed and inverted
// in float64 by gonum from the components: the reference for the bound.
func refCond(t *testing.T, c *Components, opt Options, w []float64) float64 {
	t.Helper()
	d := c.D
	cp := mat.NewDense(d, d, nil)
	total := 0.0
	for k, task := range c.Tasks {
		sc := 1.0
		if opt.Normalization == NormMean {
			sc = 1 / float64(task.N)
		}
		var g mat.Dense
		g.Scale(w[k]*sc, task.G)
		cp.Add(cp, &g)
		total += w[k]
	}
	for i := range d {
		cp.Set(i, i, cp.At(i, i)+opt.Beta*total)
	}
	var inv mat.Dense
	if err := inv.Inverse(cp); err != nil {
		t.Fatalf("reference inverse: %v", err)
	}
	return mat.Norm(cp, 1) * mat.Norm(&inv, 1)
}

// flatComponents has one task whose G = m (I − u uᵀ) is a projection
// scaled by m, u = (a, b, …, b) chosen so that ‖u uᵀ‖₁ ≈ √D/2: the
// eigenvector of C_p's smallest eigenvalue is as far from a unit vector
// as the bound's √D allows, so a bound without it falls below κ₁.
func flatComponents(d int, m float64) *Components {
	c := syntheticComponents(d, 1)
	a, b := math.Sqrt(0.5), math.Sqrt(0.5/float64(d-1))
	u := make([]float64, d)
	u[0] = a
	for i := 1; i < d; i++ {
		u[i] = b
	}
	g := mat.NewSymDense(d, nil)
	for i := range d {
		for j := i; j < d; j++ {
			v := -m * u[i] * u[j]
			if i == j {
				v += m
			}
			g.SetSym(i, j, v)
		}
	}
	c.Tasks[0].G = g
	return c
}

// TestCondBound: the bound is at least the true κ₁(C_p) computed by gonum
// in float64, and finite and below WarnCondition where β makes C_p well
// conditioned; on the flat case within 4× of it.
func TestCondBound(t *testing.T) {
	for _, tc := range []struct {
		name  string
		c     *Components
		opt   Options
		w     []float64
		tight float64 // when > 0, bound ≤ tight·κ₁
	}{
		{"synthetic", syntheticComponents(48, 3), Options{Beta: 0.1, Normalization: NormSum}, []float64{0.6, 0, 0.4}, 0},
		{"samples, sum", components(t, 0.1, NormSum, threeTasks(5, 24, 60, 90, 40)...), Options{Beta: 0.1, Normalization: NormSum}, []float64{1, 2, 3}, 0},
		{"samples, mean", components(t, 0.01, NormMean, threeTasks(6, 24, 30, 90, 40)...), Options{Beta: 0.01, Normalization: NormMean}, []float64{0.2, 0.5, 0.3}, 0},
		{"fewer samples than D", components(t, 0.5, NormSum, threeTasks(7, 32, 10, 12, 20)...), Options{Beta: 0.5, Normalization: NormSum}, []float64{1, 0, 0}, 0},
		{"flat eigenvector", flatComponents(64, 100), Options{Beta: 0.1, Normalization: NormSum}, []float64{1}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewSolver(tc.c, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			got := newGramBounds(s).Cond(tc.w)
			want := refCond(t, tc.c, tc.opt, tc.w)
			if !(got >= want) {
				t.Errorf("bound %.6g below κ₁ %.6g", got, want)
			}
			if !(got <= WarnCondition) {
				t.Errorf("bound %.6g, want at most WarnCondition (κ₁ %.6g)", got, want)
			}
			if tc.tight > 0 && !(got <= tc.tight*want) {
				t.Errorf("bound %.6g more than %g× κ₁ %.6g", got, tc.tight, want)
			}
		})
	}
}

// TestCondBoundNone: no bound (+Inf) where the argument does not hold.
func TestCondBoundNone(t *testing.T) {
	c := syntheticComponents(16, 2)
	for _, tc := range []struct {
		name string
		beta float64
		w    []float64
	}{
		{"β = 0", 0, []float64{1, 1}},
		{"negative weight", 0.1, []float64{1, -0.5}},
		{"β within the rounding slack", 1e-300, []float64{1, 1}},
		{"no weight", 0.1, []float64{0, 0}}, // β Σ w = 0: no lower bound of λ_min
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewSolver(c, Options{Beta: tc.beta, Normalization: NormSum})
			if err != nil {
				t.Fatal(err)
			}
			if got := newGramBounds(s).Cond(tc.w); !math.IsInf(got, 1) {
				t.Errorf("bound %g, want +Inf", got)
			}
		})
	}
}

// TestGramBoundsNorm: ‖G_t‖₁ read from the upper triangle is gonum's 1-norm
// of the full symmetric matrix, and the slack is 8 D² ε of it.
func TestGramBoundsNorm(t *testing.T) {
	c := syntheticComponents(20, 3)
	c.Tasks[1].G.SetSym(3, 17, -5) // a column whose sum comes from both triangles
	s, err := NewSolver(c, Options{Beta: 0.1, Normalization: NormSum})
	if err != nil {
		t.Fatal(err)
	}
	b := newGramBounds(s)
	for k, task := range c.Tasks {
		want := mat.Norm(task.G, 1)
		if math.Abs(b.Norm(k)-want) > 1e-12*want {
			t.Errorf("task %d: ‖G‖₁ %.15g, gonum's %.15g", k, b.Norm(k), want)
		}
		if want := 8 * 20 * 20 * epsilon * b.Norm(k); b.Slack(k) != want {
			t.Errorf("task %d: slack %g, want %g", k, b.Slack(k), want)
		}
	}
}

// TestSolverBounded: a solver that proved its G_t (ProveConditionBound)
// reports the a-priori bound instead of Dpocon's estimate (Bounded, and at
// least κ₁ computed by gonum in float64) wherever the bound is at most
// WarnCondition, for W_p and for the factored first request alike; a
// solver not asked, a one-shot solver, β = 0 and an indefinite G_t keep the
// estimate (at most κ₁). Either way W_p is the same matrix.
func TestSolverBounded(t *testing.T) {
	indefinite := syntheticComponents(32, 2)
	indefinite.Tasks[1].G.SetSym(0, 0, -1) // C_p stays positive definite: G_0's diagonal is above 2
	// G_1 shifted so that λ_min(G_1) = −10 e, e the slack of G_1 before the
	// shift (about 27 slacks of the shifted matrix, whose 1-norm is
	// smaller): beyond what the proof allows, by far less than any
	// indefinite G_t a fit could produce. TestProveRefusesTwoSlacks holds
	// the proof to 2 slacks.
	barely := syntheticComponents(32, 2)
	{
		g := barely.Tasks[1].G
		var eig mat.EigenSym
		if !eig.Factorize(g, false) {
			t.Fatal("eigenvalues did not converge")
		}
		e := 8 * 32 * 32 * epsilon * mat.Norm(g, 1)
		shift := eig.Values(nil)[0] + 10*e
		for i := range 32 {
			g.SetSym(i, i, g.At(i, i)-shift)
		}
	}
	for _, tc := range []struct {
		name    string
		c       *Components
		beta    float64
		oneShot bool
		prove   bool // ProveConditionBound called
		proved  bool // what it returns
		bounded bool
	}{
		{"proved, β > 0", syntheticComponents(48, 3), 0.1, false, true, true, true},
		{"proved, samples", components(t, 0.1, NormSum, threeTasks(5, 24, 60, 90, 40)...), 0.1, false, true, true, true},
		{"not asked", syntheticComponents(48, 3), 0.1, false, false, false, false},
		{"one-shot", syntheticComponents(48, 3), 0.1, true, true, false, false},
		{"β = 0", syntheticComponents(48, 3), 0, false, true, true, false},
		{"a G_t indefinite", indefinite, 0.1, false, true, false, false},
		{"a G_t indefinite by tens of slacks", barely, 0.1, false, true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opt := Options{Beta: tc.beta, Normalization: NormSum}
			newSolver := NewSolver
			if tc.oneShot {
				newSolver = NewOneShotSolver
			}
			s, err := newSolver(tc.c, opt)
			if err != nil {
				t.Fatal(err)
			}
			if tc.prove {
				if got := s.ProveConditionBound(); got != tc.proved {
					t.Fatalf("ProveConditionBound = %v, want %v", got, tc.proved)
				}
			}
			ref, err := NewOneShotSolver(tc.c, opt)
			if err != nil {
				t.Fatal(err)
			}
			w := make([]float64, len(tc.c.Tasks))
			for k := range w {
				w[k] = float64(k + 1)
			}
			p, err := NewPreference(s.Tasks(), w)
			if err != nil {
				t.Fatal(err)
			}
			kappa := refCond(t, tc.c, opt, p.Weights())
			got := mat.NewDense(tc.c.D, tc.c.D, nil)
			st, err := s.SolveIntoStats(got, p)
			if err != nil {
				t.Fatal(err)
			}
			f, err := s.Factor(p)
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range []struct {
				what string
				st   SolveStats
			}{{"solve", st}, {"factor", f.Stats()}} {
				if x.st.Bounded != tc.bounded {
					t.Errorf("%s: Bounded %v, want %v", x.what, x.st.Bounded, tc.bounded)
				}
				if x.st.Bounded && !(x.st.Cond >= kappa && x.st.Cond <= WarnCondition) {
					t.Errorf("%s: bound %.6g, want in [κ₁ %.6g, WarnCondition]", x.what, x.st.Cond, kappa)
				}
				if !x.st.Bounded && !(x.st.Cond <= kappa*(1+1e-9) && x.st.Cond > 0) {
					t.Errorf("%s: estimate %.6g, want in (0, κ₁ %.6g]", x.what, x.st.Cond, kappa)
				}
			}
			want, err := ref.Solve(p)
			if err != nil {
				t.Fatal(err)
			}
			if !mat.EqualApprox(got, want, 1e-12) {
				t.Errorf("W_p differs from the one-shot solver's by more than 1e-12")
			}
		})
	}
}
