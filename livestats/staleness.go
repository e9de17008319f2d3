package livestats

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/heldout"
)

// ReconError returns, over a batch of rows, the squared reconstruction
// error Σ ‖W z_mtl − z_ind‖² of the correction w (D×D, row-major) and the
// squared norm Σ ‖z_ind‖² of the targets, in float64: the relative error
// is resid/target. mtl and ind are row-major rows×D, row i of each from the
// same input.
func ReconError(w []float64, mtl, ind []float32, d int) (resid, target float64, err error) {
	if d <= 0 || len(w) != d*d {
		return 0, 0, fmt.Errorf("recon error: W has %d values, want D×D for D=%d", len(w), d)
	}
	if len(mtl) != len(ind) || len(mtl)%d != 0 {
		return 0, 0, fmt.Errorf("recon error: rows of %d and %d values: want the same multiple of D=%d", len(mtl), len(ind), d)
	}
	rows := len(mtl) / d
	if rows == 0 {
		return 0, 0, nil
	}
	z := make([]float64, 2*rows*d)
	zm, p := z[:rows*d], z[rows*d:]
	for i, v := range mtl {
		zm[i] = float64(v)
	}
	// P = Z_mtl Wᵀ: row r is W z_mtl of sample r.
	blas64.Gemm(blas.NoTrans, blas.Trans, 1,
		blas64.General{Rows: rows, Cols: d, Stride: d, Data: zm},
		blas64.General{Rows: d, Cols: d, Stride: d, Data: w}, 0,
		blas64.General{Rows: rows, Cols: d, Stride: d, Data: p})
	for i, v := range ind {
		y := float64(v)
		e := p[i] - y
		resid += e * e
		target += y * y
	}
	return resid, target, nil
}

// correction is a watched task's correction and its reference error.
type correction struct {
	w        []float64 // Ŵ_t, D×D row-major
	recorded float64   // the reference relative error; 0 when unknown
}

// staleness is a task's live reconstruction error: the sums since its
// correction was watched (the gauge), and the sums ever (the counters).
type staleness struct {
	corr atomic.Pointer[correction]

	// Under the task's mutex.
	gen                     *correction // the correction the live sums are of
	resid, target           float64
	rows                    int64
	residTotal, targetTotal float64
}

// measure computes a batch's error against the current correction, if
// any, and returns it with the correction it is of.
func (st *staleness) measure(mtl, ind []float32, d int) (resid, target float64, c *correction) {
	c = st.corr.Load()
	if c == nil {
		return 0, 0, nil
	}
	resid, target, err := ReconError(c.w, mtl, ind, d)
	if err != nil {
		return 0, 0, nil // sizes were checked
	}
	return resid, target, c
}

// record adds a batch's error, under the task's mutex: to the counters in
// any case, to the live sums if it is of the current correction.
func (st *staleness) record(c *correction, resid, target float64, rows int64) {
	if c == nil {
		return
	}
	st.residTotal += resid
	st.targetTotal += target
	if c == st.gen {
		st.resid += resid
		st.target += target
		st.rows += rows
	}
}

// Stale is a task's live reconstruction error beside its reference.
type Stale struct {
	// Live is the relative error Σ ‖Ŵ_t z_mtl − z_ind‖² / Σ ‖z_ind‖² over
	// the Rows rows sampled since the correction was watched; NaN before
	// any.
	Live float64
	Rows int64
	// Recorded is the same error on the calibration samples, from the
	// components file; 0 when unknown.
	Recorded float64
}

// Staleness returns the live error of task's watched correction, and
// false when the task is not sampled or no correction is watched.
func (s *Sampler) Staleness(task string) (Stale, bool) {
	t, ok := s.tasks[task]
	if !ok {
		return Stale{}, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.stale.gen
	if c == nil {
		return Stale{}, false
	}
	live := t.stale.resid / t.stale.target
	if t.stale.rows == 0 {
		live = nan
	}
	return Stale{Live: live, Rows: t.stale.rows, Recorded: c.recorded}, true
}

// WatchTask makes task's staleness measured against the correction w
// (D×D), whose reconstruction error on the calibration samples is
// recorded (0 when unknown); nil w stops measuring it. The live sums start
// again from zero.
func (s *Sampler) WatchTask(task string, w mat.Matrix, recorded float64) error {
	t, ok := s.tasks[task]
	if !ok {
		return fmt.Errorf("livestats: watch: task %q is not sampled", task)
	}
	var c *correction
	if w != nil {
		r, cc := w.Dims()
		if r != s.d || cc != s.d {
			return fmt.Errorf("livestats: watch: task %s: W is %d×%d, want %d×%d", task, r, cc, s.d, s.d)
		}
		c = &correction{w: make([]float64, 0, s.d*s.d), recorded: max(recorded, 0)}
		for i := range s.d {
			for j := range s.d {
				c.w = append(c.w, w.At(i, j))
			}
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stale.corr.Store(c)
	t.stale.gen = c
	t.stale.resid, t.stale.target, t.stale.rows = 0, 0, 0
	return nil
}

// Watch measures the staleness of the components c under opts: for every
// sampled task of c, its own correction Ŵ_t (the one-hot preference) and
// its reference error on the calibration samples, the file's recorded
// value at the file's default options, else computed from the task's
// statistics in closed form (heldout.Relative) when the file records the
// sum of squares, else unknown. A sampled task that c does not have is no
// longer watched. Solving costs O(D³) per task; call it when the
// components are loaded, not per request. The tasks whose Ŵ_t cannot be
// solved are returned as one error, the others watched.
func (s *Sampler) Watch(c *react.Components, opts react.Options) error {
	if c != nil && c.D != s.d {
		return fmt.Errorf("livestats: watch: the components have D=%d, the sampled features D=%d", c.D, s.d)
	}
	solver, err := react.NewOneShotSolver(c, opts)
	if err != nil {
		return fmt.Errorf("livestats: watch: %w", err)
	}
	defaults := opts == react.DefaultOptions(c)
	var errs []error
	for _, t := range s.order {
		st, ok := c.Task(t.name)
		if !ok {
			s.WatchTask(t.name, nil, 0)
			continue
		}
		w, err := solver.Single(t.name)
		if err != nil {
			s.WatchTask(t.name, nil, 0)
			errs = append(errs, fmt.Errorf("livestats: watch: task %s: %w", t.name, err))
			continue
		}
		recorded := 0.0
		switch {
		case defaults && st.ReconError > 0:
			recorded = st.ReconError
		default:
			recorded, _ = heldout.Relative(w, st)
		}
		if err := s.WatchTask(t.name, w, recorded); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

var nan = math.NaN()
