package react

import (
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
)

// The condition number of C_p, bounded before the solve.
//
// C_p = Σ_t w_t s_t G_t + β (Σ_t w_t) I with w_t ≥ 0, s_t > 0 and every G_t
// a Gram matrix, positive semi-definite. Hence
//
//	‖C_p‖₁    ≤ Σ_t w_t s_t ‖G_t‖₁ + β Σ_t w_t        (triangle inequality)
//	λ_min(C_p) ≥ β Σ_t w_t − Σ_t w_t s_t e_t           (Weyl; λ_min(G_t) ≥ −e_t)
//	‖C_p⁻¹‖₁  ≤ √D ‖C_p⁻¹‖₂ = √D / λ_min(C_p)
//
// and κ₁(C_p) = ‖C_p‖₁ ‖C_p⁻¹‖₁ is at most their product: a bound in O(T)
// from numbers computed once per solver. e_t allows for rounding: a G_t
// accumulated in float64 may have eigenvalues a little below zero; a
// solver proves λ_min(G_t) ≥ −e_t once, when it is built (a Cholesky
// factorisation of G_t + e_t/2 I succeeds, its own backward error within
// the other half), and uses no bound when that fails: on the host when
// asked to (Solver.ProveConditionBound, as the serving profiles do), the
// device solver on the GPU when it loads G_t.
//
// With β > 0 the bound is usually far below WarnCondition, and then the
// solve reports it instead of estimating κ₁: on the GPU the estimate is
// five triangular solves with host round trips, more than the solve
// itself; on one CPU core Dpocon is about 1 ms of a 15 ms solve at D = 512
// and 1.3 ms of a 15 ms first request at D = 768.

// gramBounds holds, by task, what the bound needs of each G_t.
type gramBounds struct {
	norm  []float64 // ‖G_t‖₁
	slack []float64 // e_t: λ_min(G_t) ≥ −e_t
}

// newGramBounds computes ‖G_t‖₁ of every task from the upper triangles
// the solver reads, and e_t = 8 D² ε ‖G_t‖₁, a multiple of the rounding of a
// Gram matrix and of a Cholesky factorisation of order D. The caller must
// still prove λ_min(G_t) ≥ −e_t before using them.
func newGramBounds(s *Solver) gramBounds {
	d := s.d
	b := gramBounds{norm: make([]float64, len(s.stats)), slack: make([]float64, len(s.stats))}
	col := make([]float64, d)
	for k, t := range s.stats {
		clear(col)
		for i := range d {
			row := t.g[i*t.gStride : i*t.gStride+d]
			col[i] += math.Abs(row[i])
			for j := i + 1; j < d; j++ {
				v := math.Abs(row[j])
				col[j] += v // g_ij in column j
				col[i] += v // g_ji = g_ij in column i
			}
		}
		for _, v := range col {
			b.norm[k] = max(b.norm[k], v)
		}
		b.slack[k] = 8 * float64(d) * float64(d) * epsilon * b.norm[k]
	}
	return b
}

// condBound returns an upper bound of the 1-norm condition number of C_p
// for the weights w (aligned with the solver's tasks), or +Inf when it has
// none: β = 0, a negative weight, or slack that outweighs β Σ w.
func (b gramBounds) condBound(s *Solver, w []float64) float64 {
	var total, norm, slack float64
	for k, wk := range w {
		if wk < 0 {
			return math.Inf(1)
		}
		if wk == 0 {
			continue
		}
		sc := s.stats[k].scale
		total += wk
		norm += wk * sc * b.norm[k]
		slack += wk * sc * b.slack[k]
	}
	shift := s.opt.Beta * total
	low := shift - slack
	if !(low > 0) {
		return math.Inf(1)
	}
	return (norm + shift) * math.Sqrt(float64(s.d)) / low
}

// proveGramBounds returns the bounds of s's tasks when every G_t is shown
// positive semi-definite within its slack, on the host: a Cholesky
// factorisation of G_t + e_t/2 I succeeds. It returns nil when one fails;
// the solver then estimates every solve's condition. The cost, T
// factorisations of order D once per solver, is what a solver that serves
// many preferences pays to skip Dpocon in each of them.
func proveGramBounds(s *Solver) *gramBounds {
	d := s.d
	b := newGramBounds(s)
	buf := make([]float64, d*d)
	for k, t := range s.stats {
		for i := range d {
			copy(buf[i*d+i:i*d+d], t.g[i*t.gStride+i:i*t.gStride+d])
			buf[i*d+i] += b.slack[k] / 2
		}
		if _, ok := lapack64.Potrf(blas64.Symmetric{N: d, Stride: d, Uplo: blas.Upper, Data: buf}); !ok {
			return nil
		}
	}
	return &b
}
