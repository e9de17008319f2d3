//go:build cuda

package cudadevice

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"

	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/internal/condbound"
	"github.com/mergectl/react-triton/react/internal/cuda"
	"github.com/mergectl/react-triton/react/internal/linalg"
)

// Load implements react.Accelerator: it uploads A_t and G_t of every task
// (react.Solver.TaskSystem), and shows the G_t positive semi-definite
// within the condition bound's slack.
func (a *accelerator) Load(s *react.Solver) (react.DeviceSolver, error) {
	d, t := s.D(), len(s.Tasks())
	ds := &solver{acc: a, s: s, d: d, beta: s.Options().Beta, scale: make([]float64, t),
		a: make([]cuda.Ptr, t), g: make([]cuda.Ptr, t)}
	ha, hg := make([]float64, d*d), make([]float64, d*d)
	b := condbound.New(d, ds.beta)
	err := a.dev.Do(func() error {
		var err error
		for _, p := range []*cuda.Ptr{&ds.ap, &ds.cp, &ds.cn} {
			if *p, err = a.dev.Alloc(f64 * d * d); err != nil {
				return err
			}
		}
		for _, p := range []*cuda.Ptr{&ds.ones, &ds.x, &ds.y} {
			if *p, err = a.dev.Alloc(f64 * d); err != nil {
				return err
			}
		}
		for _, p := range []*cuda.Ptr{&ds.info, &ds.flag} {
			if *p, err = a.dev.Alloc(f32); err != nil {
				return err
			}
		}
		// Every task's A_t, then every task's G_t, one after the other: the
		// columns of two D²×T matrices for the sums' DGEMVs.
		for _, p := range []*cuda.Ptr{&ds.abuf, &ds.gbuf} {
			if *p, err = a.dev.Alloc(f64 * d * d * t); err != nil {
				return err
			}
		}
		for _, p := range []*cuda.Ptr{&ds.wa, &ds.wg} {
			if *p, err = a.dev.Alloc(f64 * t); err != nil {
				return err
			}
		}
		ones := make([]float64, d)
		for i := range ones {
			ones[i] = 1
		}
		if err := a.dev.Upload64(ds.ones, ones); err != nil {
			return err
		}
		if ds.lwork, err = a.dev.DpotrfWork(d, ds.cp); err != nil {
			return err
		}
		if ds.work, err = a.dev.Alloc(f64 * max(ds.lwork, 1)); err != nil {
			return err
		}
		for k := range t {
			ds.a[k], ds.g[k] = ds.abuf.Add(f64*d*d*k), ds.gbuf.Add(f64*d*d*k)
			// A_t row-major, and G_t's rows (their upper triangles are
			// what cuSOLVER reads as a lower triangle).
			ds.scale[k] = s.TaskSystem(k, ha, hg)
			b.Add(hg, d, ds.scale[k])
			if err := a.dev.Upload64(ds.a[k], ha); err != nil {
				return err
			}
			if err := a.dev.Upload64(ds.g[k], hg); err != nil {
				return err
			}
			if err := a.dev.Sync(); err != nil { // host is reused
				return err
			}
		}
		return ds.proveBounds(b)
	})
	runtime.AddCleanup(ds, freeAll, deviceMemory{a.dev, ds.memory()})
	if err != nil {
		return nil, fmt.Errorf("loading %d tasks of D=%d onto %s: %w", t, d, a.dev.Name(), err)
	}
	return ds, nil
}

// deviceMemory is device memory to free once its owner is unreachable.
type deviceMemory struct {
	dev *cuda.Device
	ptr []cuda.Ptr
}

func freeAll(m deviceMemory) {
	for _, p := range m.ptr {
		m.dev.Free(p)
	}
}

// solver is a solver's statistics on the device, with the scratch
// memory of one solve (solves run one at a time, under the device's
// mutex).
type solver struct {
	acc *accelerator
	s   *react.Solver
	// d is the feature dimension, beta β, scale the factor s_t of each
	// task's normalisation.
	d     int
	beta  float64
	scale []float64
	a, g  []cuda.Ptr // per task: A_t and G_t, D×D row-major float64, in abuf and gbuf
	// abuf and gbuf hold every task's A_t and G_t, T·D² float64 each; wa
	// and wg the sums' weights, T float64 each.
	abuf, gbuf, wa, wg cuda.Ptr
	// ap and cp receive A_p (then W_p) and C_p (then its factor), cn a
	// copy of C_p for its norm; ones, x and y are D long (x and y the aux
	// lane's), info and flag one int32 each, work lwork
	// float64.
	ap, cp, cn, ones, x, y, info, flag, work cuda.Ptr
	lwork                                    int
	// bounds bound the condition number of any C_p before the solve, or
	// are nil when a G_t could not be shown positive semi-definite.
	bounds *condbound.Bounds
	pool   sync.Pool // *hostScratch
	// trace, when set (by a benchmark), is called after each step of a
	// solve, once the device has finished it.
	trace func(step string)
}

// mark waits for the device and reports step to trace, when set. Call it
// inside Do.
func (ds *solver) mark(step string) error {
	if ds.trace == nil {
		return nil
	}
	if err := ds.acc.dev.Sync(); err != nil {
		return err
	}
	ds.trace(step)
	return nil
}

func (ds *solver) memory() []cuda.Ptr {
	return []cuda.Ptr{ds.ap, ds.cp, ds.cn, ds.ones, ds.x, ds.y, ds.info, ds.flag, ds.work, ds.abuf, ds.gbuf, ds.wa, ds.wg}
}

// hostScratch is the host memory of one solve.
type hostScratch struct {
	w, wg, x, y, sign []float64 // wg: the weights of the G_t in C_p
}

// Solve implements react.DeviceSolver. In the device's column-major view
// the row-major buffers hold A_pᵀ and C_p (symmetric, its upper triangle
// read as the lower one), so Dpotrs solving C_p X = A_pᵀ leaves
// X = W_pᵀ, which is W_p row-major.
func (ds *solver) Solve(p react.Preference) (react.DeviceMatrix, react.SolveStats, error) {
	s, dev, d := ds.s, ds.acc.dev, ds.d
	hs, _ := ds.pool.Get().(*hostScratch)
	if hs == nil {
		hs = &hostScratch{w: make([]float64, len(ds.scale)), wg: make([]float64, len(ds.scale)), x: make([]float64, d),
			y: make([]float64, d), sign: make([]float64, d)}
	}
	defer ds.pool.Put(hs)
	if err := s.Weights(hs.w, p); err != nil {
		return nil, react.SolveStats{}, err
	}
	var st react.SolveStats
	if ds.bounds != nil {
		// Well conditioned for sure: no estimate (react/internal/condbound).
		if b := ds.bounds.Cond(hs.w); b <= react.WarnCondition {
			st = react.SolveStats{Cond: b, Bounded: true}
		}
	}
	var refused error
	var m *matrix
	err := dev.Do(func() error {
		total := 0.0
		for k, wk := range hs.w {
			total += wk
			hs.wg[k] = wk * ds.scale[k]
		}
		if err := ds.sums(hs); err != nil {
			return err
		}
		if err := dev.Daxpy(d, total*ds.beta, ds.ones, 1, ds.cp, d+1); err != nil { // + β Σp I
			return err
		}
		if err := ds.mark("sums"); err != nil {
			return err
		}
		// Unless bounded, ‖C_p‖₁ on the aux lane, from a copy of C_p, while
		// main factorises C_p in place.
		if !st.Bounded {
			if err := dev.CopyDtoD(ds.cn, ds.cp, f64*d*d); err != nil {
				return err
			}
			if err := dev.AuxWaitsMain(); err != nil {
				return err
			}
		}
		if err := dev.Dpotrf(d, ds.cp, ds.work, ds.lwork, ds.info); err != nil {
			return err
		}
		var anorm, inorm float64
		if !st.Bounded {
			if err := dev.OnAux(func() (err error) {
				anorm, err = linalg.EstimateOneNorm(d, ds.symv, hs.x, hs.y, hs.sign)
				return err
			}); err != nil {
				return err
			}
		}
		if info, err := dev.DownloadInt32(ds.info); err != nil {
			return err
		} else if info < 0 {
			// An illegal argument: a fault of ours, never of C_p.
			return fmt.Errorf("cusolverDnDpotrf: argument %d is illegal (devInfo %d)", -info, info)
		} else if info > 0 {
			st = react.SolveStats{Cond: math.Inf(1)}
			refused = s.Refusal(hs.w, p.String(), st.Cond)
			return nil
		}
		if err := ds.mark("factor+norm"); err != nil {
			return err
		}
		// W_p on main: C_p X = A_pᵀ, then rounded to float32 on the device
		// into a buffer of its own, the flag saying whether a value left
		// float32's range; meanwhile ‖C_p⁻¹‖₁ on aux, from the factor
		// (both only read it).
		w, err := ds.acc.spare.get(dev, f32*d*d)
		if err != nil {
			return err
		}
		if err := dev.Dpotrs(d, d, ds.cp, ds.ap, ds.info); err != nil {
			ds.acc.spare.put(dev, spareBuffer{w, f32 * d * d})
			return err
		}
		if err := dev.Zero(ds.flag, f32); err != nil {
			ds.acc.spare.put(dev, spareBuffer{w, f32 * d * d})
			return err
		}
		if err := dev.RoundTo32(w, ds.ap, d*d, ds.flag); err != nil {
			ds.acc.spare.put(dev, spareBuffer{w, f32 * d * d})
			return err
		}
		if !st.Bounded {
			if err := dev.OnAux(func() (err error) {
				inorm, err = linalg.EstimateOneNorm(d, ds.solve, hs.x, hs.y, hs.sign)
				return err
			}); err != nil {
				ds.acc.spare.put(dev, spareBuffer{w, f32 * d * d})
				return err
			}
		}
		bad, err := dev.DownloadInt32(ds.flag)
		if err != nil {
			ds.acc.spare.put(dev, spareBuffer{w, f32 * d * d})
			return err
		}
		if err := ds.mark("solve+inverse-norm+round"); err != nil {
			ds.acc.spare.put(dev, spareBuffer{w, f32 * d * d})
			return err
		}
		if !st.Bounded {
			st.Cond = anorm * inorm
		}
		if !(st.Cond <= react.MaxCondition) { // also catches NaN
			ds.acc.spare.put(dev, spareBuffer{w, f32 * d * d})
			refused = s.Refusal(hs.w, p.String(), st.Cond)
			return nil
		}
		if bad != 0 {
			ds.acc.spare.put(dev, spareBuffer{w, f32 * d * d})
			// Rare: the host's check of the float64 W_p says which entry.
			wp := make([]float64, d*d)
			if err := dev.Download64(wp, ds.ap); err != nil {
				return err
			}
			if err := dev.Sync(); err != nil {
				return err
			}
			_, refused = react.Float32MatrixTo(make([]float32, d*d), mat.NewDense(d, d, wp))
			if refused == nil {
				return errors.New("the device found W_p beyond float32's range, the host did not")
			}
			return nil
		}
		m = &matrix{acc: ds.acc, d: d, w: w}
		return nil
	})
	if m != nil {
		runtime.AddCleanup(m, ds.acc.release, spareBuffer{m.w, f32 * d * d})
	}
	if err != nil {
		return nil, st, fmt.Errorf("solve on %s: preference %q: %w", dev.Name(), p.String(), err)
	}
	if refused != nil {
		return nil, st, refused
	}
	return m, st, nil
}

// sums stores A_p = Σ w_t A_t in ap and Σ w_t s_t G_t in cp, the weights
// in hs.w and hs.wg. When more than a third of the tasks weigh, as two
// DGEMVs over the D²×T matrices of every A_t and every G_t (each read
// once, A_p and C_p written once); otherwise as one DAXPY per weighing
// task and matrix, which reads only those (and A_p and C_p once each).
// Call it inside Do.
func (ds *solver) sums(hs *hostScratch) error {
	dev, d, t := ds.acc.dev, ds.d, len(hs.w)
	nnz := 0
	for _, wk := range hs.w {
		if wk != 0 {
			nnz++
		}
	}
	if 3*nnz > t {
		if err := dev.Upload64(ds.wa, hs.w); err != nil {
			return err
		}
		if err := dev.Upload64(ds.wg, hs.wg); err != nil {
			return err
		}
		if err := dev.DgemvN(d*d, t, 1, ds.abuf, d*d, ds.wa, 0, ds.ap); err != nil {
			return err
		}
		return dev.DgemvN(d*d, t, 1, ds.gbuf, d*d, ds.wg, 0, ds.cp)
	}
	if err := dev.Zero(ds.ap, f64*d*d); err != nil {
		return err
	}
	if err := dev.Zero(ds.cp, f64*d*d); err != nil {
		return err
	}
	for k, wk := range hs.w {
		if wk == 0 {
			continue
		}
		if err := dev.Daxpy(d*d, wk, ds.a[k], 1, ds.ap, 1); err != nil {
			return err
		}
		if err := dev.Daxpy(d*d, hs.wg[k], ds.g[k], 1, ds.cp, 1); err != nil {
			return err
		}
	}
	return nil
}

// proveBounds sets bounds to b, the bounds of the tasks uploaded, when
// every G_t is shown positive semi-definite within the bounds' slack: a
// Cholesky factorisation of G_t + e_t/2 I succeeds
// (react/internal/condbound). Call it inside Do, before any solve.
func (ds *solver) proveBounds(b *condbound.Bounds) error {
	dev, d := ds.acc.dev, ds.d
	for k := range ds.g {
		if err := dev.CopyDtoD(ds.cp, ds.g[k], f64*d*d); err != nil {
			return err
		}
		if err := dev.Daxpy(d, b.Slack(k)/2, ds.ones, 1, ds.cp, d+1); err != nil {
			return err
		}
		if err := dev.Dpotrf(d, ds.cp, ds.work, ds.lwork, ds.info); err != nil {
			return err
		}
		info, err := dev.DownloadInt32(ds.info)
		if err != nil {
			return err
		}
		if info < 0 {
			return fmt.Errorf("cusolverDnDpotrf: argument %d is illegal (devInfo %d)", -info, info)
		}
		if info > 0 {
			return nil // not shown: every solve estimates
		}
	}
	ds.bounds = b
	return nil
}

// symv stores C_p x in y, through the device, from the copy of C_p. Call
// it on the aux lane.
func (ds *solver) symv(y, x []float64) error {
	dev, d := ds.acc.dev, ds.d
	if err := dev.Upload64(ds.x, x); err != nil {
		return err
	}
	if err := dev.Dsymv(d, 1, ds.cn, d, ds.x, 0, ds.y); err != nil {
		return err
	}
	if err := dev.Download64(y, ds.y); err != nil {
		return err
	}
	return dev.Sync()
}

// solve stores C_p⁻¹ x in y, through the device (after the factorisation).
// Call it on the aux lane.
func (ds *solver) solve(y, x []float64) error {
	dev, d := ds.acc.dev, ds.d
	if err := dev.Upload64(ds.x, x); err != nil {
		return err
	}
	if err := dev.Dcholsolve(d, ds.cp, ds.x); err != nil {
		return err
	}
	if err := dev.Download64(y, ds.x); err != nil {
		return err
	}
	return dev.Sync()
}
