//go:build cuda

package cudadevice

import (
	"fmt"
	"sync"

	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/internal/cuda"
)

// init makes react.BackendCUDA available: the device opens when
// react.UseBackend asks for it.
func init() {
	react.RegisterCUDA(open)
}

// opened is the process's device, opened once.
var opened struct {
	once sync.Once
	acc  *accelerator
	err  error
}

// open opens the first device, once, and returns it, or why it cannot.
func open() (react.Accelerator, error) {
	opened.once.Do(func() {
		d, err := cuda.Open(0)
		if err != nil {
			opened.err = err
			return
		}
		opened.acc = &accelerator{dev: d}
	})
	if opened.err != nil {
		return nil, opened.err
	}
	return opened.acc, nil
}

// accelerator is the device, with the scratch memory of the
// corrections of host batches, which its mutex (Device.Do) guards.
type accelerator struct {
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

// Name implements react.Accelerator.
func (a *accelerator) Name() string { return "cuda: " + a.dev.Name() }

// CopyDevice implements react.Accelerator.
func (a *accelerator) CopyDevice(dst, src uintptr, n int) error {
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

// CopyDeviceToHost implements react.Accelerator.
func (a *accelerator) CopyDeviceToHost(dst []byte, src uintptr) error {
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
func (a *accelerator) checkRanges(dst, src uintptr, n int) error {
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

// release takes back the buffer of a W_p no longer referenced, from a
// cleanup: it is kept for the next W_p of its size, or freed.
func (a *accelerator) release(b spareBuffer) {
	_ = a.dev.Do(func() error { a.spare.put(a.dev, b); return nil })
}

// reserve makes the batch scratch hold at least n values. Call it inside
// Do.
func (a *accelerator) reserve(n int) error {
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
