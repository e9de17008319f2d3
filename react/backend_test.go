package react

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestMain runs the package's tests on the backend REACT_TEST_BACKEND names,
// by default BackendAuto: OpenBLAS in a build with the openblas tag, gonum's
// pure Go otherwise. scripts/test.sh runs them both ways.
func TestMain(m *testing.M) {
	got, err := UseBackend(envBackend())
	if err != nil {
		fmt.Fprintln(os.Stderr, "react tests:", err)
		os.Exit(2)
	}
	fmt.Fprintf(os.Stderr, "react tests: linear algebra backend %s (available: %s)\n", got, strings.Join(AvailableBackends(), ", "))
	if why := BackendFallback(); why != "" {
		fmt.Fprintln(os.Stderr, "react tests:", why)
	}
	os.Exit(m.Run())
}

// envBackend is the backend REACT_TEST_BACKEND asks for, BackendAuto by
// default.
func envBackend() string {
	if b := os.Getenv("REACT_TEST_BACKEND"); b != "" {
		return b
	}
	return BackendAuto
}

func TestUseBackend(t *testing.T) {
	defer func(name string) {
		if _, err := UseBackend(name); err != nil {
			t.Fatal(err)
		}
	}(CurrentBackend())

	avail := AvailableBackends()
	if !slices.Contains(avail, BackendGo) {
		t.Fatalf("AvailableBackends() = %v, want it to include %q", avail, BackendGo)
	}
	auto, err := UseBackend(BackendAuto)
	if err != nil {
		t.Fatal(err)
	}
	wantAuto := BackendGo
	if slices.Contains(avail, BackendOpenBLAS) {
		wantAuto = BackendOpenBLAS
	}
	why := BackendFallback()
	if slices.Contains(avail, BackendCUDA) && why == "" {
		wantAuto = BackendCUDA // a GPU opened
	}
	if auto != wantAuto || CurrentBackend() != wantAuto {
		t.Errorf("UseBackend(auto) = %q (current %q), want %q (fallback %q)", auto, CurrentBackend(), wantAuto, why)
	}
	if cpu := CPUBackend(); (auto == BackendCUDA && cpu == BackendCUDA) || (auto != BackendCUDA && cpu != auto) {
		t.Errorf("CPUBackend() = %q with %q in use", cpu, auto)
	}
	if (auto == BackendCUDA) != (CurrentAccelerator() != nil) {
		t.Errorf("UseBackend(auto) = %q with accelerator %v", auto, CurrentAccelerator())
	}
	if why != "" && !strings.HasPrefix(why, "cuda backend unusable, "+wantAuto+" instead: ") {
		t.Errorf("BackendFallback() = %q, want it to say what runs instead and why", why)
	}
	if got, err := UseBackend(BackendGo); err != nil || got != BackendGo || gemmBatch {
		t.Errorf("UseBackend(go) = %q, %v (GEMM batches %v); want go, pure-Go GEMV per row", got, err, gemmBatch)
	}
	if got := solveWorkers(); got != runtime.GOMAXPROCS(0) {
		t.Errorf("go backend after %s: %d solve workers, want GOMAXPROCS (%d): its calls run on one thread", auto, got, runtime.GOMAXPROCS(0))
	}
	if _, err := UseBackend("mkl"); err == nil || !strings.Contains(err.Error(), `"mkl" is not in this binary`) {
		t.Errorf("UseBackend(mkl) = %v, want an error listing the backends", err)
	}
	if !slices.Contains(avail, BackendOpenBLAS) {
		if _, err := UseBackend(BackendOpenBLAS); err == nil || !strings.Contains(err.Error(), "built without the openblas tag") {
			t.Errorf("UseBackend(openblas) without it = %v, want an error that says how to build it", err)
		}
	}
	if !slices.Contains(avail, BackendCUDA) {
		if _, err := UseBackend(BackendCUDA); err == nil || !strings.Contains(err.Error(), "built without the cuda tag") {
			t.Errorf("UseBackend(cuda) without it = %v, want an error that says how to build it", err)
		}
	}
	for _, s := range []string{"auto", "go", "openblas", "cuda"} {
		if got, err := ParseBackend(s); err != nil || got != s {
			t.Errorf("ParseBackend(%q) = %q, %v", s, got, err)
		}
	}
	if _, err := ParseBackend("rocm"); err == nil {
		t.Error("ParseBackend(rocm) succeeded")
	}
}
