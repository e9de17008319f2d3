//go:build cuda

package cudadevice

import (
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/internal/cuda"
)

// matrix is W_p on the device, float32 row-major, and its host copy,
// made on first use.
type matrix struct {
	acc     *accelerator
	d       int
	w       cuda.Ptr
	once    sync.Once
	host    []float32
	hostErr error
}

// D implements react.DeviceMatrix.
func (m *matrix) D() int { return m.d }

// Host implements react.DeviceMatrix: the first call copies W_p from the
// device.
func (m *matrix) Host() ([]float32, error) {
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

// Apply implements react.DeviceMatrix: the batch is uploaded into the
// accelerator's scratch, multiplied by one SGEMM and downloaded.
func (m *matrix) Apply(dst, z []float32) error {
	rows, err := react.CheckBatch(dst, z, m.d)
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

// ApplyDeviceToHost implements react.DeviceMatrix: the batch is corrected
// into the accelerator's scratch and downloaded.
func (m *matrix) ApplyDeviceToHost(dst []float32, z uintptr, rows int) error {
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

// ApplyDevice implements react.DeviceMatrix.
func (m *matrix) ApplyDevice(dst, z uintptr, rows int) error {
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
func (m *matrix) gemm(out, z cuda.Ptr, rows int) error {
	return m.acc.dev.SgemmTN(m.d, rows, m.d, m.w, z, out)
}
