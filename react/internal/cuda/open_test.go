//go:build cuda

package cuda

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// TestOpen opens the first device. What it must find depends on the
// machine, which REACT_CUDA_EXPECT names (scripts/test.sh sets it):
//
//   - "gpu": a device (bench/gpu.sh, on a GPU machine);
//   - "stub": the libraries of .cache/cuda and the libcuda stub, so every
//     function resolves and cuInit fails with CUDA_ERROR_STUB_LIBRARY;
//   - "none": no libcuda at all, so loading fails and says so;
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
	case "":
	default:
		t.Fatalf("REACT_CUDA_EXPECT=%q: want gpu, stub or none", want)
	}
}

func TestLibraries(t *testing.T) {
	libs := Libraries()
	if len(libs) != 3 || libs[0][0] != "libcuda.so.1" || libs[1][0] != "libcublas.so.13" || libs[2][0] != "libcusolver.so.12" {
		t.Errorf("Libraries() = %v", libs)
	}
}
