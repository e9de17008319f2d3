package react

import (
	"fmt"
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
	// setThreads bounds the threads the backend's routines may use; nil
	// when the backend runs on the calling goroutine only.
	setThreads func(n int)
}

var (
	backendsMu sync.Mutex
	backends   = map[string]*backend{
		BackendGo: {blas32: gonumblas.Implementation{}, blas64: gonumblas.Implementation{}, lapack: gonumlapack.Implementation{}},
	}
	current   = BackendGo
	gemmBatch = false
)

// registerBackend makes a backend available to UseBackend (OpenBLAS
// registers itself when built in).
func registerBackend(name string, b *backend) {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	backends[name] = b
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
// blas32, blas64 and lapack64) to the named backend and returns the name of
// the one in use: BackendAuto resolves to BackendOpenBLAS when the binary
// has it, else BackendGo. An unknown name, or BackendOpenBLAS in a binary
// built without it, is an error that lists the backends built in.
//
// Call it once at start-up, before any computation: switching while other
// goroutines compute is not safe.
func UseBackend(name string) (string, error) {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	if name == BackendAuto {
		name = BackendGo
		if _, ok := backends[BackendOpenBLAS]; ok {
			name = BackendOpenBLAS
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
		if name == BackendOpenBLAS {
			hint = " (this binary was built without the openblas tag; see make build)"
		}
		return "", fmt.Errorf("linear algebra backend %q is not in this binary%s: want %s, or %s",
			name, hint, strings.Join(names, ", "), BackendAuto)
	}
	blas32.Use(b.blas32)
	blas64.Use(b.blas64)
	lapack64.Use(b.lapack)
	current, gemmBatch = name, b.gemmCorrect
	return name, nil
}

// SetBackendThreads bounds the threads the backend in use may start for
// one call (OpenBLAS's thread pool); n ≤ 0 leaves the backend's default.
// The pure-Go backend runs each call on its caller's goroutine and ignores
// it (the solver's own parallelism follows GOMAXPROCS). Servers set 1, so
// that concurrent requests, not one large call, use the cores.
func SetBackendThreads(n int) {
	backendsMu.Lock()
	b := backends[current]
	backendsMu.Unlock()
	if n > 0 && b.setThreads != nil {
		b.setThreads(n)
	}
}

// ParseBackend checks a backend name given in a flag or a configuration:
// auto, go or openblas (whether the binary has it is UseBackend's check).
func ParseBackend(s string) (string, error) {
	switch s {
	case BackendAuto, BackendGo, BackendOpenBLAS:
		return s, nil
	}
	return "", fmt.Errorf("unknown linear algebra backend %q (want %s, %s or %s)", s, BackendAuto, BackendGo, BackendOpenBLAS)
}
