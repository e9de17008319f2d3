package react

import (
	"fmt"

	"gonum.org/v1/gonum/mat"
)

// The aggregation baselines of the paper's ablation combine the single-task
// corrections Ŵ_t after the fact instead of solving the preference-weighted
// objective. They are kept for evaluation; the sidecar uses Solve.

// Naive returns the "naive" aggregation Σ p_t Ŵ_t of the single-task
// corrections.
func (s *Solver) Naive(p Preference) (*mat.Dense, error) {
	w := make([]float64, len(s.tasks))
	if err := s.Weights(w, p); err != nil {
		return nil, fmt.Errorf("naive aggregation: %w", err)
	}
	sum := mat.NewDense(s.d, s.d, nil)
	for k, wk := range w {
		if wk == 0 {
			continue
		}
		single, err := s.Single(s.tasks[k])
		if err != nil {
			return nil, fmt.Errorf("naive aggregation: %w", err)
		}
		single.Scale(wk, single)
		sum.Add(sum, single)
	}
	return sum, nil
}

// Polar returns the "polar" aggregation of the single-task corrections. Each
// Ŵ_t is split into its polar factors Ŵ_t = R_t P_t, with R_t orthogonal and
// P_t symmetric positive semi-definite (from the SVD Ŵ_t = U Σ Vᵀ:
// R_t = U Vᵀ, P_t = V Σ Vᵀ). The stretches are averaged linearly,
// P̄ = Σ p_t P_t, which is again symmetric positive semi-definite. The
// weighted sum of rotations Σ p_t R_t is in general not orthogonal, so the
// averaged rotation R̄ is its own orthogonal polar factor: the orthogonal
// matrix nearest to Σ p_t R_t in the Frobenius norm (the chordal weighted
// mean on the orthogonal group). The result is R̄ P̄. A one-hot preference
// gives Ŵ_t back.
func (s *Solver) Polar(p Preference) (*mat.Dense, error) {
	w := make([]float64, len(s.tasks))
	if err := s.Weights(w, p); err != nil {
		return nil, fmt.Errorf("polar aggregation: %w", err)
	}
	d := s.d
	rSum := mat.NewDense(d, d, nil)
	pSum := mat.NewDense(d, d, nil)
	for k, wk := range w {
		if wk == 0 {
			continue
		}
		single, err := s.Single(s.tasks[k])
		if err != nil {
			return nil, fmt.Errorf("polar aggregation: %w", err)
		}
		r, stretch, err := polarFactors(single)
		if err != nil {
			return nil, fmt.Errorf("polar aggregation: task %q: %w", s.tasks[k], err)
		}
		r.Scale(wk, r)
		rSum.Add(rSum, r)
		stretch.Scale(wk, stretch)
		pSum.Add(pSum, stretch)
	}
	rBar, err := Procrustes(rSum)
	if err != nil {
		return nil, fmt.Errorf("polar aggregation: averaged rotation: %w", err)
	}
	out := mat.NewDense(d, d, nil)
	out.Mul(rBar, pSum)
	return out, nil
}

// polarFactors returns the polar decomposition m = R P of a square matrix,
// R orthogonal and P symmetric positive semi-definite.
func polarFactors(m *mat.Dense) (r, p *mat.Dense, err error) {
	n, _ := m.Dims()
	var svd mat.SVD
	if !svd.Factorize(m, mat.SVDFull) {
		return nil, nil, fmt.Errorf("SVD of the %d×%d correction did not converge", n, n)
	}
	var u, v mat.Dense
	svd.UTo(&u)
	svd.VTo(&v)
	sigma := svd.Values(nil)
	r = mat.NewDense(n, n, nil)
	r.Mul(&u, v.T())
	// P = V Σ Vᵀ.
	vs := mat.NewDense(n, n, nil)
	vs.Apply(func(i, j int, _ float64) float64 { return v.At(i, j) * sigma[j] }, vs)
	p = mat.NewDense(n, n, nil)
	p.Mul(vs, v.T())
	return r, p, nil
}
