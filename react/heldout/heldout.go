// Package heldout chooses the options of a correction (β and the
// normalisation) without labels, by the error with which each option's
// corrections reconstruct the experts' features on calibration samples
// held out of the fit: calibrate fit's --beta auto. The error comes from
// the held-out samples' statistics alone (Error), never the samples.
package heldout

import (
	"errors"
	"fmt"
	"math"
	"slices"

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

// Relative returns the relative reconstruction error
// Σ ‖W z_mtl − z_ind‖² / Σ ‖z_ind‖² of W on the samples whose statistics t
// holds, from the sums alone (Error with yy = t.SumSquares), and false when
// t does not record its sum of squares. Rounding can leave the closed form
// a few ε below 0 when W reconstructs the samples almost exactly; it is
// clamped to 0.
func Relative(w mat.Matrix, t *react.TaskStats) (float64, bool) {
	if t.SumSquares <= 0 {
		return 0, false
	}
	return max(Error(w, t, t.SumSquares)/t.SumSquares, 0), true
}

// Record sets the ReconError of the named tasks of c (every task when
// none is named) that record their sum of squares: the relative reconstruction error (Relative) of the task's own
// correction Ŵ_t under c's default β and normalisation, on the task's own
// samples. It is an in-sample value, so new samples of the same inputs give
// a somewhat larger one, the more so the fewer samples the task has per
// dimension. A task without its sum of squares is left at 0 (not
// recorded), and so is a task whose Ŵ_t cannot be solved (at β = 0 with a
// singular G_t): those are returned as one error, the others recorded.
// calibrate records it whenever it writes a file, since ReconError holds
// only at the file's default options.
func Record(c *react.Components, tasks ...string) error {
	s, err := react.NewOneShotSolver(c, react.DefaultOptions(c))
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	var errs []error
	for _, name := range tasks {
		if _, ok := c.Task(name); !ok {
			errs = append(errs, fmt.Errorf("record: no task %q", name))
		}
	}
	for _, t := range c.Tasks {
		if len(tasks) > 0 && !slices.Contains(tasks, t.Name) {
			continue
		}
		t.ReconError = 0
		if t.SumSquares <= 0 {
			continue
		}
		w, err := s.Single(t.Name)
		if err != nil {
			errs = append(errs, fmt.Errorf("record: task %s: %w", t.Name, err))
			continue
		}
		t.ReconError, _ = Relative(w, t)
	}
	return errors.Join(errs...)
}
