//go:build cuda

package cuda

/*
#include "calls.h"
*/
import "C"

import "fmt"

// Error is a CUDA call that failed: the function and the status it
// returned (a CUresult, cublasStatus_t or cusolverStatus_t).
type Error struct {
	Func string
	Code int
	Name string // the status's name, when the library gives one
}

// Error implements error.
func (e *Error) Error() string {
	if e.Name != "" {
		return fmt.Sprintf("%s: %s (%d)", e.Func, e.Name, e.Code)
	}
	return fmt.Sprintf("%s: status %d", e.Func, e.Code)
}

// check turns a driver API result into an error.
func check(fn string, r C.CUresult) error {
	if r == C.CUDA_SUCCESS {
		return nil
	}
	e := &Error{Func: fn, Code: int(r)}
	var s *C.char
	if C.rc_cuGetErrorName(r, &s) == C.CUDA_SUCCESS && s != nil {
		e.Name = C.GoString(s)
	} else if r == C.CUDA_ERROR_STUB_LIBRARY {
		e.Name = "CUDA_ERROR_STUB_LIBRARY"
	}
	return e
}

// checkBLAS turns a cuBLAS status into an error, named by cuBLAS.
func checkBLAS(fn string, s C.cublasStatus_t) error {
	if s == C.CUBLAS_STATUS_SUCCESS {
		return nil
	}
	e := &Error{Func: fn, Code: int(s)}
	if name := C.rc_cublasGetStatusName(s); name != nil {
		e.Name = C.GoString(name)
	}
	return e
}

// checkSolver turns a cuSOLVER status into an error, named from the
// header's enumeration (cuSOLVER has no function for it).
func checkSolver(fn string, s C.cusolverStatus_t) error {
	if s == C.CUSOLVER_STATUS_SUCCESS {
		return nil
	}
	e := &Error{Func: fn, Code: int(s)}
	if name := C.rc_solver_status_name(s); name != nil {
		e.Name = C.GoString(name)
	}
	return e
}

// checkRuntime turns a CUDA runtime error into an error, named by the
// runtime.
func checkRuntime(fn string, r C.cudaError_t) error {
	if r == C.cudaSuccess {
		return nil
	}
	e := &Error{Func: fn, Code: int(r)}
	if name := C.rc_cudaGetErrorName(r); name != nil {
		e.Name = C.GoString(name)
	}
	return e
}
