//go:build openblas

package react

// #cgo LDFLAGS: -lopenblas -llapacke
// void openblas_set_num_threads(int num_threads);
import "C"

import (
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
		lapack:      netlapack.Implementation{},
		gemmCorrect: true,
		setThreads:  func(n int) { C.openblas_set_num_threads(C.int(n)) },
	})
}
