//go:build cuda

package cuda

/*
#include "calls.h"
*/
import "C"

// The dense routines, on column-major matrices in device memory, queued on
// the device's stream. Call them inside Do. Package react stores matrices
// row-major; a row-major matrix read column-major is its transpose, which
// the callers account for.

// Daxpy computes y += alpha·x for n values with strides incX and incY.
func (d *Device) Daxpy(n int, alpha float64, x Ptr, incX int, y Ptr, incY int) error {
	a := C.double(alpha)
	return checkBLAS("cublasDaxpy", C.rc_cublasDaxpy(d.cur.blas, C.int(n), &a, x.c(), C.int(incX), y.c(), C.int(incY)))
}

// DgemvN computes y = alpha·A·x + beta·y for the m×n A at a (column-major,
// leading dimension lda), x n long and y m long, both packed. beta 0 does
// not read y.
func (d *Device) DgemvN(m, n int, alpha float64, a Ptr, lda int, x Ptr, beta float64, y Ptr) error {
	al, be := C.double(alpha), C.double(beta)
	return checkBLAS("cublasDgemv", C.rc_cublasDgemv(d.cur.blas, C.CUBLAS_OP_N, C.int(m), C.int(n), &al, a.c(), C.int(lda), x.c(), 1, &be, y.c(), 1))
}

// Dsymv computes y = alpha·A·x + beta·y for the symmetric n×n A whose lower
// triangle (column-major) is at a, with leading dimension lda.
func (d *Device) Dsymv(n int, alpha float64, a Ptr, lda int, x Ptr, beta float64, y Ptr) error {
	al, be := C.double(alpha), C.double(beta)
	return checkBLAS("cublasDsymv", C.rc_cublasDsymv(d.cur.blas, C.CUBLAS_FILL_MODE_LOWER, C.int(n), &al, a.c(), C.int(lda), x.c(), 1, &be, y.c(), 1))
}

// SgemmTN computes C = Aᵀ·B for A k×m (so Aᵀ is m×k), B k×n and C m×n,
// column-major, packed (leading dimensions k, k and m).
func (d *Device) SgemmTN(m, n, k int, a, b, c Ptr) error {
	one, zero := C.float(1), C.float(0)
	return checkBLAS("cublasSgemm", C.rc_cublasSgemm(d.cur.blas, C.CUBLAS_OP_T, C.CUBLAS_OP_N, C.int(m), C.int(n), C.int(k),
		&one, a.c(), C.int(k), b.c(), C.int(k), &zero, c.c(), C.int(m)))
}

// DpotrfWork returns the number of float64 values of workspace Dpotrf
// needs for an n×n matrix at a.
func (d *Device) DpotrfWork(n int, a Ptr) (int, error) {
	var lwork C.int
	err := checkSolver("cusolverDnDpotrf_bufferSize", C.rc_cusolverDnDpotrf_bufferSize(d.cur.solver, C.CUBLAS_FILL_MODE_LOWER, C.int(n), a.c(), C.int(n), &lwork))
	return int(lwork), err
}

// Dpotrf factorises the symmetric positive definite n×n matrix at a (its
// lower triangle, column-major, packed) as L·Lᵀ in place, with lwork
// values of workspace at work; info receives 0, or the order of the first
// minor that is not positive definite.
func (d *Device) Dpotrf(n int, a, work Ptr, lwork int, info Ptr) error {
	return checkSolver("cusolverDnDpotrf", C.rc_cusolverDnDpotrf(d.cur.solver, C.CUBLAS_FILL_MODE_LOWER, C.int(n), a.c(), C.int(n), work.c(), C.int(lwork), info.c()))
}

// Dpotrs solves A·X = B in place of B (n×nrhs, column-major, packed) with
// the factor from Dpotrf at a.
func (d *Device) Dpotrs(n, nrhs int, a, b, info Ptr) error {
	return checkSolver("cusolverDnDpotrs", C.rc_cusolverDnDpotrs(d.cur.solver, C.CUBLAS_FILL_MODE_LOWER, C.int(n), C.int(nrhs), a.c(), C.int(n), b.c(), C.int(n), info.c()))
}

// Dcholsolve solves A·x = b in place of b (n values at x) with the factor
// L of A = L·Lᵀ from Dpotrf at a (lower, column-major, packed): two
// triangular solves with one vector (cuBLAS's DTRSV), which for one
// right-hand side run in fewer kernels than cuSOLVER's DPOTRS.
func (d *Device) Dcholsolve(n int, a, x Ptr) error {
	if err := checkBLAS("cublasDtrsv", C.rc_cublasDtrsv(d.cur.blas, C.CUBLAS_FILL_MODE_LOWER, C.CUBLAS_OP_N, C.CUBLAS_DIAG_NON_UNIT, C.int(n), a.c(), C.int(n), x.c(), 1)); err != nil {
		return err
	}
	return checkBLAS("cublasDtrsv", C.rc_cublasDtrsv(d.cur.blas, C.CUBLAS_FILL_MODE_LOWER, C.CUBLAS_OP_T, C.CUBLAS_DIAG_NON_UNIT, C.int(n), a.c(), C.int(n), x.c(), 1))
}
