// Package heldout chooses the options of a correction (β and the
// normalisation) without labels, by the error with which each option's
// corrections reconstruct the experts' features on calibration samples
// held out of the fit: calibrate fit's --beta auto. The error comes from
// the held-out samples' statistics alone (Error), never the samples.
package heldout

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/react"
)

// Error returns Σ ‖W z_mtl − z_ind‖² over the samples whose statistics h
// holds (S = Σ z_ind z_mtlᵀ, G = Σ z_mtl z_mtlᵀ), where yy = Σ ‖z_ind‖²
// over the same samples: tr(W G Wᵀ) − 2 tr(W Sᵀ) + yy, with no need of the
// samples themselves.
func Error(w mat.Matrix, h *react.TaskStats, yy float64) float64 {
	var wg mat.Dense
	wg.Mul(w, h.G)
	quad := 0.0 // tr(W G Wᵀ) = Σ_ij (W G)_ij W_ij
	cross := 0.0
	r, c := w.Dims()
	for i := range r {
		for j := range c {
			wij := w.At(i, j)
			quad += wg.At(i, j) * wij
			cross += wij * h.S.At(i, j)
		}
	}
	return quad - 2*cross + yy
}

// Task is a task's statistics over samples held out of a fit, and
// YY = Σ ‖z_ind‖² over them.
type Task struct {
	Stats *react.TaskStats
	YY    float64
}

// Candidate is one option's held-out reconstruction error: the mean over
// tasks of the relative error ‖W Z_mtl − Z_ind‖² / ‖Z_ind‖² on the task's
// held-out samples, with W the task's own correction Ŵ_t (OneHot) and the
// equal preference's W_p (Equal). Score, their sum, ranks the options.
type Candidate struct {
	react.Options
	OneHot float64 `json:"one_hot"`
	Equal  float64 `json:"equal"`
	Score  float64 `json:"score"`
}

// Select evaluates every option of grid on fit, the statistics of the
// samples not held out, against held (one per task of fit, in its order),
// and returns the candidates in grid's order and the index of the best (the
// lowest Score; the first of equals).
func Select(fit *react.Components, held []Task, grid []react.Options) ([]Candidate, int, error) {
	if len(held) != len(fit.Tasks) {
		return nil, 0, fmt.Errorf("select: %d held-out tasks for %d tasks", len(held), len(fit.Tasks))
	}
	if len(grid) == 0 {
		return nil, 0, fmt.Errorf("select: no options to choose from")
	}
	for i, h := range held {
		if h.Stats == nil || h.Stats.N == 0 || h.YY <= 0 {
			return nil, 0, fmt.Errorf("select: task %s: no held-out samples", fit.Tasks[i].Name)
		}
	}
	tasks := fit.TaskNames()
	out := make([]Candidate, len(grid))
	best := 0
	w := mat.NewDense(fit.D, fit.D, nil)
	for k, opt := range grid {
		s, err := react.NewSolver(fit, opt)
		if err != nil {
			return nil, 0, fmt.Errorf("select: β=%g %s: %w", opt.Beta, opt.Normalization, err)
		}
		c := Candidate{Options: opt}
		eq := mat.NewDense(fit.D, fit.D, nil)
		if _, err := s.SolveIntoStats(eq, react.Uniform(tasks)); err != nil {
			return nil, 0, fmt.Errorf("select: β=%g %s: %w", opt.Beta, opt.Normalization, err)
		}
		for i, t := range tasks {
			p, _ := react.OneHot(tasks, t)
			if _, err := s.SolveIntoStats(w, p); err != nil {
				return nil, 0, fmt.Errorf("select: β=%g %s: task %s: %w", opt.Beta, opt.Normalization, t, err)
			}
			c.OneHot += Error(w, held[i].Stats, held[i].YY) / held[i].YY / float64(len(tasks))
			c.Equal += Error(eq, held[i].Stats, held[i].YY) / held[i].YY / float64(len(tasks))
		}
		c.Score = c.OneHot + c.Equal
		if math.IsNaN(c.Score) {
			return nil, 0, fmt.Errorf("select: β=%g %s: the held-out error is NaN", opt.Beta, opt.Normalization)
		}
		out[k] = c
		if c.Score < out[best].Score {
			best = k
		}
	}
	return out, best, nil
}

// BetaGrid is the default grid of a β selection: 10⁻⁴ to 10², a point a
// decade, under each normalisation.
func BetaGrid(norms []react.Normalization) []react.Options {
	var out []react.Options
	for _, n := range norms {
		for _, b := range []float64{1e-4, 1e-3, 1e-2, 0.1, 1, 10, 100} {
			out = append(out, react.Options{Beta: b, Normalization: n})
		}
	}
	return out
}
