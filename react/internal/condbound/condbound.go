// Package condbound bounds the condition number of C_p before the solve,
// for react's host solver and the GPU's (react/cudadevice) alike.
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
// asked to (react.Solver.ProveConditionBound, as the serving profiles do),
// the device solver on the GPU when it loads G_t.
//
// With β > 0 the bound is usually far below react.WarnCondition, and then
// the solve reports it instead of estimating κ₁: on the GPU the estimate
// is five triangular solves with host round trips, more than the solve
// itself; on one CPU core Dpocon is about 1 ms of a 15 ms solve at D = 512
// and 1.3 ms of a 15 ms first request at D = 768.
package condbound

import "math"

// epsilon is the float64 machine epsilon, 2⁻⁵².
const epsilon = 0x1p-52

// Bounds holds, by task, what the bound needs of each G_t, for a solver of
// dimension D and regulariser β.
type Bounds struct {
	d     int
	beta  float64
	norm  []float64 // ‖G_t‖₁
	slack []float64 // e_t: λ_min(G_t) ≥ −e_t
	scale []float64 // s_t
}

// New returns the bounds of a solver of dimension d and regulariser beta,
// with no task yet.
func New(d int, beta float64) *Bounds {
	return &Bounds{d: d, beta: beta}
}

// Add appends a task: G_t, whose upper triangle is read from the first D
// values of the D rows of g, stride apart, weighed with scale (s_t). It
// computes ‖G_t‖₁ and e_t = 8 D² ε ‖G_t‖₁, a multiple of the rounding of
// a Gram matrix and of a Cholesky factorisation of order D. The caller
// must still prove λ_min(G_t) ≥ −e_t before using the bounds.
func (b *Bounds) Add(g []float64, stride int, scale float64) {
	d := b.d
	col := make([]float64, d)
	for i := range d {
		row := g[i*stride : i*stride+d]
		col[i] += math.Abs(row[i])
		for j := i + 1; j < d; j++ {
			v := math.Abs(row[j])
			col[j] += v // g_ij in column j
			col[i] += v // g_ji = g_ij in column i
		}
	}
	norm := 0.0
	for _, v := range col {
		norm = max(norm, v)
	}
	b.norm = append(b.norm, norm)
	b.slack = append(b.slack, 8*float64(d)*float64(d)*epsilon*norm)
	b.scale = append(b.scale, scale)
}

// Norm returns ‖G_t‖₁ of the k-th task added.
func (b *Bounds) Norm(k int) float64 { return b.norm[k] }

// Slack returns e_t of the k-th task added: the bound holds once a
// Cholesky factorisation of G_t + e_t/2 I succeeds.
func (b *Bounds) Slack(k int) float64 { return b.slack[k] }

// Cond returns an upper bound of the 1-norm condition number of C_p for
// the weights w (aligned with the tasks added), or +Inf when it has none:
// β = 0, a negative weight, or slack that outweighs β Σ w.
func (b *Bounds) Cond(w []float64) float64 {
	var total, norm, slack float64
	for k, wk := range w {
		if wk < 0 {
			return math.Inf(1)
		}
		if wk == 0 {
			continue
		}
		sc := b.scale[k]
		total += wk
		norm += wk * sc * b.norm[k]
		slack += wk * sc * b.slack[k]
	}
	shift := b.beta * total
	low := shift - slack
	if !(low > 0) {
		return math.Inf(1)
	}
	return (norm + shift) * math.Sqrt(float64(b.d)) / low
}
