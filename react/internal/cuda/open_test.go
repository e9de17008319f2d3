//go:build cuda

package cuda

import (
	"errors"
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// TestOpen opens the first device. What it must find depends on the
// machine, which REACT_CUDA_EXPECT names (scripts/test.sh sets it):
//
//   - "gpu": a device (bench/gpu.sh, on a GPU machine);
//   - "stub": the libraries of .cache/cuda and the libcuda stub, so every
//     function resolves and cuInit fails with CUDA_ERROR_STUB_LIBRARY;
//   - "none": no libcuda at all, so loading fails and says so;
//   - "nodevice": a driver that sees no GPU (the emulator with
//     REACT_EMU_DEVICES=0), so Open fails with ErrNoDevice;
//   - "emulator": the strict CUDA emulator (scripts/cuda-emulator.sh), a
//     device named as the emulator names it;
//   - unset: whatever the machine has, reported.
func TestOpen(t *testing.T) {
	d, err := Open(0)
	if err == nil {
		defer d.Close()
		v, _ := DriverVersion()
		t.Logf("opened %s, driver CUDA %d", d.Name(), v)
	} else {
		t.Logf("no device: %v", err)
	}
	switch want := os.Getenv("REACT_CUDA_EXPECT"); want {
	case "gpu":
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
	case "stub":
		var ce *Error
		if !errors.As(err, &ce) || ce.Func != "cuInit" || ce.Code != 34 {
			t.Fatalf("Open = %v, want cuInit's CUDA_ERROR_STUB_LIBRARY (34) after every function resolved", err)
		}
	case "none":
		if err == nil || !strings.Contains(err.Error(), "libcuda.so") {
			t.Fatalf("Open = %v, want an error naming libcuda.so", err)
		}
	case "emulator":
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		if !strings.HasPrefix(d.Name(), "CUDA emulator (react-triton)") {
			t.Fatalf("opened %s, want the emulator", d.Name())
		}
	case "nodevice":
		if !errors.Is(err, ErrNoDevice) {
			t.Fatalf("Open = %v, want ErrNoDevice", err)
		}
	case "":
	default:
		t.Fatalf("REACT_CUDA_EXPECT=%q: want gpu, emulator, stub, none or nodevice", want)
	}
}

func TestLibraries(t *testing.T) {
	for _, tc := range []struct {
		driver int
		want   [][]string
	}{
		{0, [][]string{
			{"libcuda.so.1", "libcuda.so"},
			{"libcublas.so.13", "libcublas.so.12", "libcublas.so"},
			{"libcusolver.so.12", "libcusolver.so.11", "libcusolver.so"},
			{"libcudart.so.13", "libcudart.so.12", "libcudart.so"},
		}},
		{13000, [][]string{
			{"libcuda.so.1", "libcuda.so"},
			{"libcublas.so.13", "libcublas.so.12", "libcublas.so"},
			{"libcusolver.so.12", "libcusolver.so.11", "libcusolver.so"},
			{"libcudart.so.13", "libcudart.so.12", "libcudart.so"},
		}},
		// A CUDA 12 driver cannot run CUDA 13's libraries: not tried.
		{12080, [][]string{
			{"libcuda.so.1", "libcuda.so"},
			{"libcublas.so.12", "libcublas.so"},
			{"libcusolver.so.11", "libcusolver.so"},
			{"libcudart.so.12", "libcudart.so"},
		}},
	} {
		if got := Libraries(tc.driver); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Libraries(%d) = %v, want %v", tc.driver, got, tc.want)
		}
	}
}

// openOrSkip opens the first device, or skips where REACT_CUDA_EXPECT
// does not promise one (gpu: a real GPU; emulator: the strict emulator).
func openOrSkip(t *testing.T) *Device {
	t.Helper()
	d, err := Open(0)
	if err != nil {
		if want := os.Getenv("REACT_CUDA_EXPECT"); want == "gpu" || want == "emulator" {
			t.Fatalf("Open: %v", err)
		}
		t.Skipf("no device: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TestErrorNames: a failing cuBLAS or cuSOLVER call is reported with its
// status's name, not a bare number.
func TestErrorNames(t *testing.T) {
	d := openOrSkip(t)
	for _, tc := range []struct {
		call func() error
		want string
	}{
		{func() error { return d.SgemmTN(-1, 1, 1, 0, 0, 0) }, "cublasSgemm: CUBLAS_STATUS_INVALID_VALUE"},
		// (cusolverDnDpotrf_bufferSize accepts n = -1 on an H200 with
		// cuSOLVER 12: seen, so not used here.)
		{func() error {
			info, err := d.Alloc(4)
			if err != nil {
				return err
			}
			defer d.FreeLocked(info)
			return d.Dpotrf(-1, 0, 0, 0, info)
		}, "cusolverDnDpotrf: CUSOLVER_STATUS_INVALID_VALUE"},
	} {
		err := d.Do(tc.call)
		var ce *Error
		if !errors.As(err, &ce) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("error %v, want one starting %q", err, tc.want)
		}
	}
}

// TestCheckRange: whole allocations of this device pass, from either
// allocator; host memory, a range past an allocation's end and address 0
// do not.
func TestCheckRange(t *testing.T) {
	d := openOrSkip(t)
	const n = 4096
	var p Ptr
	if err := d.Do(func() error {
		var err error
		p, err = d.Alloc(n)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer d.Free(p)
	r, err := RuntimeAlloc(n)
	if err != nil {
		t.Fatal(err)
	}
	defer RuntimeFree(r)
	host := make([]byte, n)
	for _, tc := range []struct {
		name string
		p    Ptr
		n    int
		ok   bool
	}{
		{"cuMemAlloc, whole", p, n, true},
		{"cuMemAlloc, inside", p + 100, n - 100, true},
		{"cudaMalloc, whole", r, n, true},
		{"past the end", p + 100, n, false},
		{"host memory", Ptr(unsafe.Pointer(&host[0])), n, false},
		{"address 0", 0, 4, false},
	} {
		err := d.Do(func() error { return d.CheckRange(tc.p, tc.n) })
		if (err == nil) != tc.ok {
			t.Errorf("%s: CheckRange = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
	runtime.KeepAlive(host)
}
