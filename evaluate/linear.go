package evaluate

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// LinearFit is how well the best linear map explains a task's expert
// features from the backbone's, on the evaluation data: the least-squares
// W (no intercept, like W_p) of z_ind ≈ W z_mtl, and
//
//	R² = 1 − Σ‖z_ind − W z_mtl‖² / Σ‖z_ind − mean(z_ind)‖².
//
// InSample fits and scores W on every sample, as the oracle does: an upper
// bound that comes close to 1 when the task has fewer samples than D
// (the ridge keeps it just below). Heldout
// fits on one half of a seeded random split and scores on the other, both
// ways round, summing the residuals: what a linear map can do for samples
// it was not fitted on.
type LinearFit struct {
	Backbone string  `json:"backbone"`
	Task     string  `json:"task"`
	Samples  int     `json:"samples"`
	InSample float64 `json:"r2_in_sample"`
	Heldout  float64 `json:"r2_heldout"`
	// Ridged is BestHeldout's R², at the relative ridge Ridge.
	Ridged float64 `json:"r2_heldout_ridge"`
	Ridge  float64 `json:"ridge"`
}

// linearRidge is the relative ridge added to Σ z_mtl z_mtlᵀ's diagonal
// (times its mean diagonal entry) so that the least-squares system stays
// solvable when features are collinear or samples fewer than D.
const linearRidge = 1e-6

// moments are the sums a least-squares fit and its residual need.
type moments struct {
	n    int
	s    *mat.Dense    // Σ y xᵀ (D×D)
	g    *mat.SymDense // Σ x xᵀ
	yy   float64       // Σ ‖y‖²
	ySum []float64     // Σ y
}

// momentsOf sums over the rows of x and y (n×d, row-major) listed in idx.
func momentsOf(x, y []float32, d int, idx []int) *moments {
	xs := mat.NewDense(len(idx), d, nil)
	ys := mat.NewDense(len(idx), d, nil)
	m := &moments{n: len(idx), ySum: make([]float64, d)}
	for r, i := range idx {
		for j := 0; j < d; j++ {
			xv, yv := float64(x[i*d+j]), float64(y[i*d+j])
			xs.Set(r, j, xv)
			ys.Set(r, j, yv)
			m.yy += yv * yv
			m.ySum[j] += yv
		}
	}
	m.s = mat.NewDense(d, d, nil)
	m.s.Mul(ys.T(), xs)
	m.g = mat.NewSymDense(d, nil)
	m.g.SymOuterK(1, xs.T())
	return m
}

// fit returns the least-squares W = S (G + εI)⁻¹ with ε = linearRidge
// times G's mean diagonal entry.
func (m *moments) fit() (*mat.Dense, error) { return m.fitRidge(linearRidge) }

// fitRidge returns the ridge solution W = S (G + εI)⁻¹ with ε = rel times
// G's mean diagonal entry (rel itself when G is zero).
func (m *moments) fitRidge(rel float64) (*mat.Dense, error) {
	d, _ := m.s.Dims()
	g := mat.NewSymDense(d, nil)
	g.CopySym(m.g)
	trace := 0.0
	for i := 0; i < d; i++ {
		trace += g.At(i, i)
	}
	eps := rel * trace / float64(d)
	if eps == 0 {
		eps = rel
	}
	for i := 0; i < d; i++ {
		g.SetSym(i, i, g.At(i, i)+eps)
	}
	var chol mat.Cholesky
	if !chol.Factorize(g) {
		return nil, fmt.Errorf("linear fit: Σ z zᵀ + εI is not positive definite")
	}
	// W = S G⁻¹, i.e. G Wᵀ = Sᵀ (G symmetric).
	var wt mat.Dense
	if err := chol.SolveTo(&wt, m.s.T()); err != nil {
		return nil, fmt.Errorf("linear fit: %w", err)
	}
	return mat.DenseCopyOf(wt.T()), nil
}

// residual returns Σ‖y − W x‖² over m's samples:
// Σ‖y‖² − 2 tr(W Sᵀ) + tr(W G Wᵀ).
func (m *moments) residual(w *mat.Dense) float64 {
	d, _ := w.Dims()
	var gw mat.Dense
	gw.Mul(m.g, w.T()) // G Wᵀ
	cross, quad := 0.0, 0.0
	wr, sr, gr := w.RawMatrix(), m.s.RawMatrix(), gw.RawMatrix()
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			cross += wr.Data[i*wr.Stride+j] * sr.Data[i*sr.Stride+j]
			quad += wr.Data[i*wr.Stride+j] * gr.Data[j*gr.Stride+i]
		}
	}
	return m.yy - 2*cross + quad
}

// total returns Σ‖y − mean(y)‖² over m's samples.
func (m *moments) total() float64 {
	c := 0.0
	for _, v := range m.ySum {
		c += v * v
	}
	return m.yy - c/float64(m.n)
}

// add returns the sums over m's and o's samples together.
func (m *moments) add(o *moments) *moments {
	d, _ := m.s.Dims()
	out := &moments{n: m.n + o.n, s: mat.NewDense(d, d, nil), g: mat.NewSymDense(d, nil), yy: m.yy + o.yy, ySum: make([]float64, d)}
	out.s.Add(m.s, o.s)
	out.g.AddSym(m.g, o.g)
	for j := range out.ySum {
		out.ySum[j] = m.ySum[j] + o.ySum[j]
	}
	return out
}

// FitLinear measures LinearFit's R² of the map x → y on n samples of
// dimension d (row-major float32), splitting the held-out halves with a
// PCG seeded by seed.
func FitLinear(x, y []float32, d int, seed uint64) (inSample, heldout float64, err error) {
	a, b, err := halves(x, y, d, seed)
	if err != nil {
		return 0, 0, err
	}
	return plainFit(a, b)
}

// plainFit returns FitLinear's two R² from the halves' moments.
func plainFit(a, b *moments) (inSample, heldout float64, err error) {
	all := a.add(b)
	tot := all.total()
	if tot <= 0 {
		return 0, 0, errNoVariance
	}
	w, err := all.fit()
	if err != nil {
		return 0, 0, err
	}
	inSample = 1 - all.residual(w)/tot
	heldout, err = crossFit(a, b, linearRidge)
	return inSample, heldout, err
}

// crossFit returns the held-out R² of the ridge map of relative ridge rel:
// fitted on each half, scored on the other, the residuals summed.
func crossFit(a, b *moments, rel float64) (float64, error) {
	wa, err := a.fitRidge(rel)
	if err != nil {
		return 0, err
	}
	wb, err := b.fitRidge(rel)
	if err != nil {
		return 0, err
	}
	return 1 - (b.residual(wa)+a.residual(wb))/(a.total()+b.total()), nil
}

// errNoVariance is returned when the expert features are constant.
var errNoVariance = fmt.Errorf("linear fit: the expert features do not vary")

// halves checks x and y and sums the moments of FitLinear's two seeded
// random halves of their rows.
func halves(x, y []float32, d int, seed uint64) (a, b *moments, err error) {
	if d <= 0 || len(x) != len(y) || len(x)%d != 0 {
		return nil, nil, fmt.Errorf("linear fit: %d and %d values are not two sets of rows of %d", len(x), len(y), d)
	}
	n := len(x) / d
	if n < 4 {
		return nil, nil, fmt.Errorf("linear fit: %d samples; need at least 4", n)
	}
	perm := rand.New(rand.NewPCG(seed, 0)).Perm(n)
	return momentsOf(x, y, d, perm[:n/2]), momentsOf(x, y, d, perm[n/2:]), nil
}

// RidgeGrid lists the relative ridges BestHeldout tries: ε = rel × the
// fitting half's mean diagonal of Σ z_mtl z_mtlᵀ.
var RidgeGrid = []float64{1e-6, 1e-4, 1e-3, 1e-2, 1e-1, 1}

// BestHeldout is FitLinear's held-out R² for a ridge map, at the ridge of
// RidgeGrid that scores best: with fewer samples per half than D (the
// second zoo's tasks at D = 1280), the plain least-squares map fits noise
// and its held-out R² goes negative, so the best linear map that
// generalises needs a ridge. The ridge is chosen on the scoring halves
// themselves, so the value is a slightly optimistic ceiling, like the
// oracle's.
func BestHeldout(x, y []float32, d int, seed uint64) (r2, ridge float64, err error) {
	a, b, err := halves(x, y, d, seed)
	if err != nil {
		return 0, 0, err
	}
	return bestRidge(a, b)
}

// bestRidge returns BestHeldout's R² and ridge from the halves' moments.
func bestRidge(a, b *moments) (r2, ridge float64, err error) {
	if a.total()+b.total() <= 0 {
		return 0, 0, errNoVariance
	}
	r2 = math.Inf(-1)
	for _, rel := range RidgeGrid {
		v, err := crossFit(a, b, rel)
		if err != nil {
			return 0, 0, err
		}
		if v > r2 {
			r2, ridge = v, rel
		}
	}
	return r2, ridge, nil
}

// measureLinear fills a LinearFit's R² (FitLinear's and BestHeldout's)
// from one pass over the samples: the halves' moments are summed once.
func measureLinear(x, y []float32, d int, seed uint64) (LinearFit, error) {
	a, b, err := halves(x, y, d, seed)
	if err != nil {
		return LinearFit{}, err
	}
	in, held, err := plainFit(a, b)
	if err != nil {
		return LinearFit{}, err
	}
	ridged, ridge, err := bestRidge(a, b)
	if err != nil {
		return LinearFit{}, err
	}
	return LinearFit{Samples: len(x) / d, InSample: in, Heldout: held, Ridged: ridged, Ridge: ridge}, nil
}
