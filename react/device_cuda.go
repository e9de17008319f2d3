//go:build cuda

package react

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"

	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/react/internal/condbound"
	"github.com/mergectl/react-triton/react/internal/cuda"
	"github.com/mergectl/react-triton/react/internal/linalg"
)

// The cuda backend: W_p solved and applied on the first CUDA device
// (CUDA_VISIBLE_DEVICES chooses which), through cuBLAS and cuSOLVER opened
// at run time (react/internal/cuda). The rest of the linear algebra runs
// on the best CPU backend built in.
func init() {
	registerBackend(BackendCUDA, &backend{accelerator: openCUDA})
}

// theCUDA is the process's device, opened once.
var theCUDA struct {
	once sync.Once
	acc  *cudaAccelerator
	err  error
}

func openCUDA() (Accelerator, error) {
	theCUDA.once.Do(func() {
		d, err := cuda.Open(0)
		if err != nil {
			theCUDA.err = err
			return
		}
		theCUDA.acc = &cudaAccelerator{dev: d}
	})
	if theCUDA.err != nil {
		return nil, theCUDA.err
	}
	return theCUDA.acc, nil
}

// cudaAccelerator is the device, with the scratch memory of the
// corrections of host batches, which its mutex (Device.Do) guards.
type cudaAccelerator struct {
	dev *cuda.Device
	// in and out hold a host batch on the device, cap values each.
	in, out cuda.Ptr
	cap     int
	// spare keeps the buffers of W_p's that were dropped, for the next
	// ones: a new preference then allocates no device memory, and a
	// dropped one frees none (cuMemAlloc and cuMemFree can synchronise
	// the whole device, Triton's other models included).
	spare sparePool
}

// Name implements Accelerator.
func (a *cudaAccelerator) Name() string { return "cuda: " + a.dev.Name() }

// CopyDevice implements Accelerator.
func (a *cudaAccelerator) CopyDevice(dst, src uintptr, n int) error {
	if n == 0 {
		return nil
	}
	return a.dev.Do(func() error {
		if err := a.checkRanges(dst, src, n); err != nil {
			return err
		}
		return a.dev.CopyDtoD(cuda.Ptr(dst), cuda.Ptr(src), n)
	})
}

// CopyDeviceToHost implements Accelerator.
func (a *cudaAccelerator) CopyDeviceToHost(dst []byte, src uintptr) error {
	if len(dst) == 0 {
		return nil
	}
	return a.dev.Do(func() error {
		if err := a.dev.CheckRange(cuda.Ptr(src), len(dst)); err != nil {
			return fmt.Errorf("input: %w", err)
		}
		return a.dev.DownloadBytes(dst, cuda.Ptr(src))
	})
}

// checkRanges checks that n bytes at dst and at src are this device's
// memory, each inside one allocation, before a copy or kernel touches
// them: an address from elsewhere (Triton's buffers) that is wrong would
// otherwise be a sticky error of the whole context, which Triton's other
// models on this GPU share. Call it inside Do.
func (a *cudaAccelerator) checkRanges(dst, src uintptr, n int) error {
	if err := a.dev.CheckRange(cuda.Ptr(src), n); err != nil {
		return fmt.Errorf("input: %w", err)
	}
	if err := a.dev.CheckRange(cuda.Ptr(dst), n); err != nil {
		return fmt.Errorf("output: %w", err)
	}
	return nil
}

// f64 and f32 are the sizes of the device's values in bytes.
const (
	f64 = 8
	f32 = 4
)

// Load implements Accelerator: it uploads A_t (as the solver holds it, or
// computed here when the solver precomputed none) and G_t of every task.
func (a *cudaAccelerator) Load(s *Solver) (DeviceSolver, error) {
	d := s.d
	ds := &cudaSolver{acc: a, s: s, a: make([]cuda.Ptr, len(s.stats)), g: make([]cuda.Ptr, len(s.stats))}
	host := make([]float64, d*d)
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
		t := len(s.stats)
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
		for k := range s.stats {
			t := &s.stats[k]
			ds.a[k], ds.g[k] = ds.abuf.Add(f64*d*d*k), ds.gbuf.Add(f64*d*d*k)
			// A_t row-major (packed), then G_t's rows (their upper
			// triangles are what cuSOLVER reads as a lower triangle).
			for i := range d {
				row := host[i*d : i*d+d]
				if t.a != nil {
					copy(row, t.a[i*d:i*d+d])
					continue
				}
				srow, wrow := t.s[i*t.sStride:i*t.sStride+d], t.w[i*t.wStride:i*t.wStride+d]
				for j := range row {
					row[j] = t.scale*srow[j] + s.opt.Beta*wrow[j]
				}
			}
			if err := a.dev.Upload64(ds.a[k], host); err != nil {
				return err
			}
			if err := a.dev.Sync(); err != nil { // host is reused
				return err
			}
			for i := range d {
				copy(host[i*d:i*d+d], t.g[i*t.gStride:i*t.gStride+d])
			}
			if err := a.dev.Upload64(ds.g[k], host); err != nil {
				return err
			}
			if err := a.dev.Sync(); err != nil {
				return err
			}
		}
		return ds.proveBounds()
	})
	runtime.AddCleanup(ds, freeAll, deviceMemory{a.dev, ds.memory()})
	if err != nil {
		return nil, fmt.Errorf("loading %d tasks of D=%d onto %s: %w", len(s.stats), d, a.dev.Name(), err)
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

// cudaSolver is a solver's statistics on the device, with the scratch
// memory of one solve (solves run one at a time, under the device's
// mutex).
type cudaSolver struct {
	acc  *cudaAccelerator
	s    *Solver
	a, g []cuda.Ptr // per task: A_t and G_t, D×D row-major float64, in abuf and gbuf
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
func (ds *cudaSolver) mark(step string) error {
	if ds.trace == nil {
		return nil
	}
	if err := ds.acc.dev.Sync(); err != nil {
		return err
	}
	ds.trace(step)
	return nil
}

func (ds *cudaSolver) memory() []cuda.Ptr {
	return []cuda.Ptr{ds.ap, ds.cp, ds.cn, ds.ones, ds.x, ds.y, ds.info, ds.flag, ds.work, ds.abuf, ds.gbuf, ds.wa, ds.wg}
}

// hostScratch is the host memory of one solve.
type hostScratch struct {
	w, wg, x, y, sign []float64 // wg: the weights of the G_t in C_p
}

// Solve implements DeviceSolver. In the device's column-major view the
// row-major buffers hold A_pᵀ and C_p (symmetric, its upper triangle
// read as the lower one), so Dpotrs solving C_p X = A_pᵀ leaves
// X = W_pᵀ, which is W_p row-major.
func (ds *cudaSolver) Solve(p Preference) (DeviceMatrix, SolveStats, error) {
	s, dev, d := ds.s, ds.acc.dev, ds.s.d
	hs, _ := ds.pool.Get().(*hostScratch)
	if hs == nil {
		hs = &hostScratch{w: make([]float64, len(s.tasks)), wg: make([]float64, len(s.tasks)), x: make([]float64, d),
			y: make([]float64, d), sign: make([]float64, d)}
	}
	defer ds.pool.Put(hs)
	if err := s.weightsInto(hs.w, p); err != nil {
		return nil, SolveStats{}, err
	}
	var st SolveStats
	if ds.bounds != nil {
		// Well conditioned for sure: no estimate (condbound.go).
		if b := ds.bounds.Cond(hs.w); b <= WarnCondition {
			st = SolveStats{Cond: b, Bounded: true}
		}
	}
	var refused error
	var m *cudaMatrix
	err := dev.Do(func() error {
		total := 0.0
		for k, wk := range hs.w {
			total += wk
			hs.wg[k] = wk * s.stats[k].scale
		}
		if err := ds.sums(hs); err != nil {
			return err
		}
		if err := dev.Daxpy(d, total*s.opt.Beta, ds.ones, 1, ds.cp, d+1); err != nil { // + β Σp I
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
			st = SolveStats{Cond: math.Inf(1)}
			refused = s.solveError(hs.w, p.String(), st.Cond)
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
		if !(st.Cond <= MaxCondition) { // also catches NaN
			ds.acc.spare.put(dev, spareBuffer{w, f32 * d * d})
			refused = s.solveError(hs.w, p.String(), st.Cond)
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
			_, refused = Float32MatrixTo(make([]float32, d*d), mat.NewDense(d, d, wp))
			if refused == nil {
				return errors.New("the device found W_p beyond float32's range, the host did not")
			}
			return nil
		}
		m = &cudaMatrix{acc: ds.acc, d: d, w: w}
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
func (ds *cudaSolver) sums(hs *hostScratch) error {
	dev, d, t := ds.acc.dev, ds.s.d, len(hs.w)
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

// proveBounds sets bounds when every G_t is shown positive semi-definite
// within the bounds' slack: a Cholesky factorisation of G_t + e_t/2 I
// succeeds (condbound.go). Call it inside Do, before any solve.
func (ds *cudaSolver) proveBounds() error {
	dev, d := ds.acc.dev, ds.s.d
	b := newGramBounds(ds.s)
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
func (ds *cudaSolver) symv(y, x []float64) error {
	dev, d := ds.acc.dev, ds.s.d
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
func (ds *cudaSolver) solve(y, x []float64) error {
	dev, d := ds.acc.dev, ds.s.d
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

// release takes back the buffer of a W_p no longer referenced, from a
// cleanup: it is kept for the next W_p of its size, or freed.
func (a *cudaAccelerator) release(b spareBuffer) {
	_ = a.dev.Do(func() error { a.spare.put(a.dev, b); return nil })
}

// cudaMatrix is W_p on the device, float32 row-major, and its host copy,
// made on first use.
type cudaMatrix struct {
	acc     *cudaAccelerator
	d       int
	w       cuda.Ptr
	once    sync.Once
	host    []float32
	hostErr error
}

// D implements DeviceMatrix.
func (m *cudaMatrix) D() int { return m.d }

// Host implements DeviceMatrix: the first call copies W_p from the device.
func (m *cudaMatrix) Host() ([]float32, error) {
	m.once.Do(func() {
		host := make([]float32, m.d*m.d)
		m.hostErr = m.acc.dev.Do(func() error { return m.acc.dev.Download32(host, m.w) })
		if m.hostErr != nil {
			m.hostErr = fmt.Errorf("copying W_p from %s: %w", m.acc.dev.Name(), m.hostErr)
			return
		}
		m.host = host
	})
	return m.host, m.hostErr
}

// Apply implements DeviceMatrix: the batch is uploaded into the
// accelerator's scratch, multiplied by one SGEMM and downloaded.
func (m *cudaMatrix) Apply(dst, z []float32) error {
	rows, err := checkBatch(dst, z, m.d)
	if err != nil || rows == 0 {
		return err
	}
	a, dev := m.acc, m.acc.dev
	return dev.Do(func() error {
		if err := a.reserve(len(z)); err != nil {
			return err
		}
		if err := dev.Upload32(a.in, z); err != nil {
			return err
		}
		if err := m.gemm(a.out, a.in, rows); err != nil {
			return err
		}
		return dev.Download32(dst, a.out)
	})
}

// ApplyDeviceToHost implements DeviceMatrix: the batch is corrected into
// the accelerator's scratch and downloaded.
func (m *cudaMatrix) ApplyDeviceToHost(dst []float32, z uintptr, rows int) error {
	if err := checkRows(rows, m.d); err != nil {
		return err
	}
	if len(dst) != rows*m.d {
		return fmt.Errorf("correct: destination of %d values for %d rows of %d", len(dst), rows, m.d)
	}
	if rows == 0 {
		return nil
	}
	a, dev := m.acc, m.acc.dev
	return dev.Do(func() error {
		if err := dev.CheckRange(cuda.Ptr(z), f32*len(dst)); err != nil {
			return fmt.Errorf("correct: input: %w", err)
		}
		if err := a.reserve(len(dst)); err != nil {
			return err
		}
		if err := m.gemm(a.out, cuda.Ptr(z), rows); err != nil {
			return err
		}
		return dev.Download32(dst, a.out)
	})
}

// ApplyDevice implements DeviceMatrix.
func (m *cudaMatrix) ApplyDevice(dst, z uintptr, rows int) error {
	if err := checkRows(rows, m.d); err != nil {
		return err
	}
	n := uintptr(f32 * rows * m.d)
	if rows > 0 && dst < z+n && z < dst+n {
		return errors.New("correct: destination and batch overlap in device memory")
	}
	if rows == 0 {
		return nil
	}
	return m.acc.dev.Do(func() error {
		if err := m.acc.checkRanges(dst, z, int(n)); err != nil {
			return fmt.Errorf("correct: %w", err)
		}
		return m.gemm(cuda.Ptr(dst), cuda.Ptr(z), rows)
	})
}

// checkRows refuses a batch of rows rows of d values that cuBLAS cannot
// take (its dimensions are C ints): truncated, such a count would have the
// SGEMM correct fewer rows than asked, and its size in bytes, wrapped, the
// address checks pass them, and report success. (Below it, the size fits:
// D×D float64 values fit in device memory, so D < 2³².)
func checkRows(rows, d int) error {
	if rows < 0 || rows > math.MaxInt32 {
		return fmt.Errorf("correct: %d rows of %d values", rows, d)
	}
	return nil
}

// gemm queues out = z W_pᵀ for rows rows: column-major, z is Zᵀ (D×B) and
// the row-major W_p reads as W_pᵀ, so outᵀ = W_p Zᵀ = (W_pᵀ)ᵀ Zᵀ.
func (m *cudaMatrix) gemm(out, z cuda.Ptr, rows int) error {
	return m.acc.dev.SgemmTN(m.d, rows, m.d, m.w, z, out)
}

// reserve makes the batch scratch hold at least n values. Call it inside
// Do.
func (a *cudaAccelerator) reserve(n int) error {
	if n <= a.cap {
		return nil
	}
	n = max(n, 2*a.cap)
	in, err := a.dev.Alloc(f32 * n)
	if err != nil {
		return err
	}
	out, err := a.dev.Alloc(f32 * n)
	if err != nil {
		a.dev.FreeLocked(in)
		return err
	}
	a.dev.FreeLocked(a.in)
	a.dev.FreeLocked(a.out)
	a.in, a.out, a.cap = in, out, n
	return nil
}
