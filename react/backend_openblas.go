//go:build openblas

package react

// #cgo LDFLAGS: -lopenblas -llapacke
// void openblas_set_num_threads(int num_threads);
// int openblas_get_num_threads(void);
import "C"

import (
	"gonum.org/v1/gonum/blas"
	golapack "gonum.org/v1/gonum/lapack/gonum"
	netblas "gonum.org/v1/netlib/blas/netlib"
	netlapack "gonum.org/v1/netlib/lapack/netlib"
)

// OpenBLAS, with LAPACKE for LAPACK, through gonum's netlib bindings. The
// libraries are Debian's libopenblas-dev and liblapacke-dev (make setup
// installs them).
func init() {
	registerBackend(BackendOpenBLAS, &backend{
		blas32:      netblas.Implementation{},
		blas64:      netblas.Implementation{},
		lapack:      openblasLapack{},
		gemmCorrect: true,
		gemmSolve:   true,
		setThreads:  func(n int) { C.openblas_set_num_threads(C.int(n)) },
		threads:     func() int { return int(C.openblas_get_num_threads()) },
	})
}

// openblasLapack is LAPACKE's LAPACK but for the Cholesky factorisation,
// which is gonum's blocked Dpotrf over OpenBLAS's BLAS (the backend sets
// blas64 to it): row-major through LAPACKE, OpenBLAS's own dpotrf ran at
// half the speed (11–20 GFLOP/s against 25–32 at D = 512 and 768 on one
// core, BenchmarkPotrfOpenBLAS), LAPACKE transposing the matrix in and out
// and OpenBLAS's unblocked path taking more of it.
type openblasLapack struct{ netlapack.Implementation }

// Dpotrf implements lapack.Float64.
func (openblasLapack) Dpotrf(ul blas.Uplo, n int, a []float64, lda int) bool {
	return golapack.Implementation{}.Dpotrf(ul, n, a, lda)
}
