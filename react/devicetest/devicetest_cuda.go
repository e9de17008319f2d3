//go:build cuda

package devicetest

import (
	"sync"
	"testing"

	"github.com/mergectl/react-triton/react/internal/cuda"
)

// opened is the device, opened once.
var opened struct {
	once sync.Once
	dev  *cuda.Device
	err  error
}

func device() (*cuda.Device, error) {
	opened.once.Do(func() { opened.dev, opened.err = cuda.Open(0) })
	return opened.dev, opened.err
}

// Open reports whether device memory can be had: nil, or why not.
func Open() error {
	_, err := device()
	return err
}

// mustDevice returns the device, or skips tb.
func mustDevice(tb testing.TB) *cuda.Device {
	tb.Helper()
	d, err := device()
	if err != nil {
		tb.Skipf("no CUDA device: %v", err)
	}
	return d
}

// Alloc returns n bytes of device memory, allocated as how says, freed
// when tb ends. Fresh memory holds whatever was there.
func Alloc(tb testing.TB, n int, how Allocator) uintptr {
	tb.Helper()
	d := mustDevice(tb)
	var p cuda.Ptr
	var err error
	switch how {
	case Runtime:
		p, err = cuda.RuntimeAlloc(n)
		if err == nil {
			tb.Cleanup(func() {
				if err := cuda.RuntimeFree(p); err != nil {
					tb.Errorf("cudaFree: %v", err)
				}
			})
		}
	default:
		err = d.Do(func() error {
			var err error
			p, err = d.Alloc(n)
			return err
		})
		if err == nil {
			tb.Cleanup(func() { d.Free(p) })
		}
	}
	if err != nil {
		tb.Fatalf("allocating %d bytes (%s): %v", n, how, err)
	}
	return uintptr(p)
}

// Upload copies v to the device memory at p.
func Upload(tb testing.TB, p uintptr, v []float32) {
	tb.Helper()
	d := mustDevice(tb)
	if err := d.Do(func() error { return d.Upload32(cuda.Ptr(p), v) }); err != nil {
		tb.Fatalf("upload of %d values: %v", len(v), err)
	}
}

// Download copies len(v) values from the device memory at p into v.
func Download(tb testing.TB, v []float32, p uintptr) {
	tb.Helper()
	d := mustDevice(tb)
	if err := d.Do(func() error { return d.Download32(v, cuda.Ptr(p)) }); err != nil {
		tb.Fatalf("download of %d values: %v", len(v), err)
	}
}

// Fill sets n bytes at p to the byte b (0xFF reads as NaN in float32).
func Fill(tb testing.TB, p uintptr, n int, b byte) {
	tb.Helper()
	d := mustDevice(tb)
	if err := d.Do(func() error { return d.Memset(cuda.Ptr(p), b, n) }); err != nil {
		tb.Fatalf("filling %d bytes: %v", n, err)
	}
}

// FreeMemory returns the device's free memory in bytes, as the driver
// counts it.
func FreeMemory(tb testing.TB) int {
	tb.Helper()
	d := mustDevice(tb)
	var free int
	if err := d.Do(func() error {
		var err error
		free, _, err = d.MemInfo()
		return err
	}); err != nil {
		tb.Fatal(err)
	}
	return free
}
