package control

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/mergectl/react-triton/react"
)

// Matrix is a W_p ready to apply: formed, as W (row-major float32, D×D,
// ẑ = W z), or, for a new preference whose W_p is still being formed, as
// the factored form of react.Factored (A_p and the Cholesky factor of C_p),
// which answers the same in float64 without W. It is shared by every
// request that uses it and safe for concurrent use: a factored Matrix
// switches to its W_p, atomically, once formed in the background.
type Matrix struct {
	// Key is the canonical preference W_p was solved for.
	Key string
	// D is the feature dimension.
	D int
	// W holds the D×D entries, row-major; nil while the matrix is only
	// factored, and for a matrix on a device (Matrix copies it from there).
	W []float32
	// Cond is an estimate of the 1-norm condition number of C_p, or with
	// CondBounded an upper bound of it (react.SolveStats).
	Cond float64
	// CondBounded reports that Cond is an upper bound, computed before the
	// solve, which then skipped the estimate (the profile's solver proved
	// its bound: react.Solver.ProveConditionBound, or the device's).
	CondBounded bool

	// factor is the factored form while W_p is being formed, dropped once
	// formed: it takes four times W_p's memory.
	factor atomic.Pointer[react.Factored]
	formed atomic.Pointer[[]float32] // W_p of factor, once formed
	device react.DeviceMatrix        // W_p on the device as well, or nil
}

// newFactored returns the Matrix of a factored W_p.
func newFactored(key string, d int, st react.SolveStats, f *react.Factored) *Matrix {
	m := &Matrix{Key: key, D: d, Cond: st.Cond, CondBounded: st.Bounded}
	m.factor.Store(f)
	return m
}

// Bytes is the host memory the matrix holds: 4·D² for W_p in float32, or
// 16·D² for the factored form of a new preference (A_p and the Cholesky
// factor of C_p, in float64) until W_p is formed. A matrix on a device
// counts its host copy, which it makes on first use.
func (m *Matrix) Bytes() int64 {
	d2 := int64(m.D) * int64(m.D)
	if m.factor.Load() != nil && !m.Formed() {
		return 16 * d2
	}
	return 4 * d2
}

// setFormed switches a factored matrix to its formed W_p and drops the
// factorisation.
func (m *Matrix) setFormed(w []float32) {
	if m.formed.CompareAndSwap(nil, &w) {
		// Apply reads factor before formed, so it sees one of them.
		m.factor.Store(nil)
	}
}

// ErrNotOnDevice is returned by ApplyDevice for a matrix that is not held
// on a device (the backend in use is a CPU one).
var ErrNotOnDevice = errors.New("W_p is not on a device")

// OnDevice reports whether W_p is held in a device's memory (the cuda
// backend), so that ApplyDevice can correct a batch that is there already.
func (m *Matrix) OnDevice() bool { return m.device != nil }

// ApplyDevice corrects rows rows of D float32 values at device address z
// into device address dst, on the device that holds W_p, with no copy to
// the host. It returns ErrNotOnDevice when W_p is not on a device.
func (m *Matrix) ApplyDevice(dst, z uintptr, rows int) error {
	if m.device == nil {
		return ErrNotOnDevice
	}
	if err := m.device.ApplyDevice(dst, z, rows); err != nil {
		return fmt.Errorf("applying W_p for %s on the device: %w", m.Key, err)
	}
	return nil
}

// ApplyDeviceToHost corrects rows rows of D float32 values at device
// address z into host memory dst (rows×D values), on the device that
// holds W_p: for a batch on the device whose output is in host memory. It
// returns ErrNotOnDevice when W_p is not on a device.
func (m *Matrix) ApplyDeviceToHost(dst []float32, z uintptr, rows int) error {
	if m.device == nil {
		return ErrNotOnDevice
	}
	if err := m.device.ApplyDeviceToHost(dst, z, rows); err != nil {
		return fmt.Errorf("applying W_p for %s on the device: %w", m.Key, err)
	}
	return nil
}

// Formed reports whether W_p is available as a matrix (else the matrix
// answers through its factored form). A matrix on a device is.
func (m *Matrix) Formed() bool { return m.device != nil || m.matrix() != nil }

// Matrix returns W_p (D×D row-major float32), nil while the matrix is only
// factored. For a matrix on a device, the first call copies it from there
// (nil if that fails). The caller must not modify it.
func (m *Matrix) Matrix() []float32 {
	if m.device != nil {
		w, _ := m.device.Host()
		return w
	}
	return m.matrix()
}

// matrix returns W_p when it is in host memory, nil while only factored
// or on a device.
func (m *Matrix) matrix() []float32 {
	if m.W != nil {
		return m.W
	}
	if w := m.formed.Load(); w != nil {
		return *w
	}
	return nil
}

// scratchPool holds the float64 scratch of the factored path.
var scratchPool = sync.Pool{New: func() any { return new(react.FactoredScratch) }}

// Apply stores the corrected batch in dst: each row of z (B×D, row-major)
// multiplied by W_p. dst must have z's length and must not overlap it. On a
// device it is one SGEMM there (the batch copied over and back); with W
// formed on the CPU it is react.Correct (one SGEMM for the batch with
// OpenBLAS) and does not allocate; a factored matrix computes A_p C_p⁻¹ z
// in float64.
func (m *Matrix) Apply(dst, z []float32) error {
	var err error
	// The factorisation first: setFormed stores W_p before it drops the
	// factorisation, so one of the two is there.
	f := m.factor.Load()
	switch w := m.matrix(); {
	case m.device != nil:
		err = m.device.Apply(dst, z)
	case w != nil:
		err = react.Correct(dst, z, w, m.D)
	case f != nil:
		sc := scratchPool.Get().(*react.FactoredScratch)
		err = f.Correct(dst, z, sc)
		scratchPool.Put(sc)
	default:
		err = errors.New("no matrix")
	}
	if err != nil {
		return fmt.Errorf("applying W_p for %s: %w", m.Key, err)
	}
	return nil
}
