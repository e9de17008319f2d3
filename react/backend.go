package react

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
	gonumblas "gonum.org/v1/gonum/blas/gonum"
	"gonum.org/v1/gonum/lapack"
	gonumlapack "gonum.org/v1/gonum/lapack/gonum"
	"gonum.org/v1/gonum/lapack/lapack64"
)

// The linear-algebra backends. Every hot path of the package (the Cholesky
// factorisation and triangular solves of the solver, the GEMM and SYRK of
// the accumulator, the GEMM of the batch correction, the SVD of
// Procrustes) goes through gonum's blas32, blas64 and lapack64 packages,
// whose implementation UseBackend chooses for the whole process.
const (
	// BackendAuto picks BackendOpenBLAS when the binary has it, and
	// BackendGo otherwise.
	BackendAuto = "auto"
	// BackendGo is gonum's pure-Go kernels (with their own assembly): no
	// cgo, so it builds with CGO_ENABLED=0 for static images.
	BackendGo = "go"
	// BackendOpenBLAS is OpenBLAS and LAPACKE through gonum's netlib
	// bindings (cgo), in binaries built with the openblas build tag.
	BackendOpenBLAS = "openblas"
	// BackendCUDA solves W_p and applies it on an NVIDIA GPU (cuBLAS and
	// cuSOLVER, docs/gpu.md), in binaries built with the cuda build tag
	// that import react/cudadevice; the rest of the linear algebra runs on
	// the best CPU backend built in (OpenBLAS, else Go). BackendAuto picks
	// it when a GPU and the CUDA libraries are there.
	BackendCUDA = "cuda"
)

// backend is one implementation of the BLAS and LAPACK routines.
type backend struct {
	blas32 blas.Float32
	blas64 blas.Float64
	lapack lapack.Float64
	// gemmCorrect says whether Correct multiplies a batch with one GEMM
	// (fast with a tuned BLAS) rather than one GEMV per row (faster, and
	// free of allocations, with gonum's pure-Go kernels).
	gemmCorrect bool
	// gemmSolve says whether the solve for W_p blocks its triangular
	// solves into GEMMs (linalg.CholSolveRight): faster with OpenBLAS,
	// whose TRSM runs at about half its GEMM's speed; slower with gonum's
	// kernels on one core (BenchmarkSolve: 43.6 against 47.6 ms at D = 512, T = 8).
	gemmSolve bool
	// setThreads bounds the threads the backend's routines may use; nil
	// when the backend runs on the calling goroutine only.
	setThreads func(n int)
	// threads reports the threads one call may use now; nil for one.
	threads func() int
	// accelerator, for a device backend (its BLAS fields are nil, the
	// best CPU backend's are used), opens the device: once per process,
	// with an error that says why not.
	accelerator func() (Accelerator, error)
}

var (
	backendsMu sync.Mutex
	backends   = map[string]*backend{
		BackendGo: {blas32: gonumblas.Implementation{}, blas64: gonumblas.Implementation{}, lapack: gonumlapack.Implementation{}},
	}
	current   = BackendGo
	gemmBatch = false
	gemmSolve = false
	// blasThreads is the CPU backend's threads, nil for one.
	blasThreads func() int
	// accel is the device in use (BackendCUDA), nil on the CPU; fallback
	// says why BackendAuto did not pick the device it was built with.
	accel    Accelerator
	fallback string
)

// registerBackend makes a backend available to UseBackend (OpenBLAS
// registers itself when built in).
func registerBackend(name string, b *backend) {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	backends[name] = b
}

// RegisterCUDA makes BackendCUDA available to UseBackend, with open to
// open the device: once per process, or an error that says why not.
// Package react/cudadevice calls it when built with the cuda tag: a
// binary has the cuda backend by importing that package.
func RegisterCUDA(open func() (Accelerator, error)) {
	registerBackend(BackendCUDA, &backend{accelerator: open})
}

// AvailableBackends lists the backends built into this binary, sorted.
func AvailableBackends() []string {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	names := make([]string, 0, len(backends))
	for n := range backends {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// CurrentBackend returns the name of the backend in use: BackendGo until
// UseBackend picks another.
func CurrentBackend() string {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	return current
}

// UseBackend switches the linear algebra of the whole process (gonum's
// blas32, blas64 and lapack64, and where W_p is solved and applied) to the
// named backend and returns the name of the one in use. BackendAuto
// resolves to BackendCUDA when the binary has it and a GPU opens, else to
// BackendOpenBLAS when the binary has it, else BackendGo; when a GPU
// backend built in could not be used, BackendFallback says why. An unknown
// name, a backend the binary was built without, or BackendCUDA without a
// usable GPU, is an error.
//
// Call it once at start-up, before any computation: switching while other
// goroutines compute is not safe.
func UseBackend(name string) (string, error) {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	fallback = ""
	var dev Accelerator
	if name == BackendAuto {
		name = bestCPU()
		if b, ok := backends[BackendCUDA]; ok {
			a, err := b.accelerator()
			if err != nil {
				fallback = fmt.Sprintf("%s backend unusable, %s instead: %v", BackendCUDA, name, err)
			} else {
				name, dev = BackendCUDA, a
			}
		}
	}
	b, ok := backends[name]
	if !ok {
		names := make([]string, 0, len(backends))
		for n := range backends {
			names = append(names, n)
		}
		slices.Sort(names)
		hint := ""
		switch name {
		case BackendOpenBLAS:
			hint = " (this binary was built without the openblas tag; see make build)"
		case BackendCUDA:
			hint = " (this binary was built without the cuda tag and react/cudadevice; see make build-cuda)"
		}
		return "", fmt.Errorf("linear algebra backend %q is not in this binary%s: want %s, or %s",
			name, hint, strings.Join(names, ", "), BackendAuto)
	}
	if b.accelerator != nil && dev == nil {
		a, err := b.accelerator()
		if err != nil {
			return "", fmt.Errorf("linear algebra backend %s: %w", name, err)
		}
		dev = a
	}
	cpu := b
	if b.accelerator != nil {
		cpu = backends[bestCPU()]
	}
	blas32.Use(cpu.blas32)
	blas64.Use(cpu.blas64)
	lapack64.Use(cpu.lapack)
	current, gemmBatch, gemmSolve, blasThreads, accel = name, cpu.gemmCorrect, cpu.gemmSolve, cpu.threads, dev
	return name, nil
}

// bestCPU returns the fastest CPU backend built in. The caller holds
// backendsMu.
func bestCPU() string {
	if _, ok := backends[BackendOpenBLAS]; ok {
		return BackendOpenBLAS
	}
	return BackendGo
}

// CPUBackend returns the backend that runs the linear algebra the device
// does not: CurrentBackend, or for BackendCUDA the CPU backend beside it
// (what calibrate's fits and one-shot solves run on).
func CPUBackend() string {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	if backends[current].accelerator != nil {
		return bestCPU()
	}
	return current
}

// BackendFallback says why the last UseBackend(BackendAuto) did not pick
// the GPU backend the binary was built with (no CUDA library, no driver, no
// device, ...), for the caller's log; "" when it did, or when the binary
// has none.
func BackendFallback() string {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	return fallback
}

// CurrentAccelerator returns the device W_p is solved and applied on, nil
// when the backend in use is a CPU one.
func CurrentAccelerator() Accelerator {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	return accel
}

// SetBackendThreads bounds the threads the backend in use may start for
// one call (OpenBLAS's thread pool); n ≤ 0 leaves the backend's default.
// The pure-Go backend runs each call on its caller's goroutine and ignores
// it (the solver's own parallelism follows GOMAXPROCS). Servers set 1, so
// that concurrent requests, not one large call, use the cores.
func SetBackendThreads(n int) {
	backendsMu.Lock()
	b := backends[current]
	if b.accelerator != nil {
		b = backends[bestCPU()]
	}
	backendsMu.Unlock()
	if n > 0 && b.setThreads != nil {
		b.setThreads(n)
	}
}

// solveWorkers is how many goroutines the triangular solves of a W_p split
// its rows over: GOMAXPROCS divided by the threads each backend call may
// start (SetBackendThreads), so that together they never ask for more.
func solveWorkers() int {
	n := 1
	if blasThreads != nil {
		n = max(1, blasThreads())
	}
	return max(1, runtime.GOMAXPROCS(0)/n)
}

// ParseBackend checks a backend name given in a flag or a configuration:
// auto, go, openblas or cuda (whether the binary has it is UseBackend's
// check).
func ParseBackend(s string) (string, error) {
	switch s {
	case BackendAuto, BackendGo, BackendOpenBLAS, BackendCUDA:
		return s, nil
	}
	return "", fmt.Errorf("unknown linear algebra backend %q (want %s, %s, %s or %s)", s, BackendAuto, BackendGo, BackendOpenBLAS, BackendCUDA)
}
