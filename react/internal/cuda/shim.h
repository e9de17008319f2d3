// The CUDA functions package cuda calls, as pointers of the types the CUDA
// headers declare, filled in by rc_open from the libraries dlopen finds.
// A name that cuda.h maps to a versioned symbol (cuMemAlloc to
// cuMemAlloc_v2) is resolved under that symbol.

#ifndef REACT_CUDA_SHIM_H
#define REACT_CUDA_SHIM_H

#include <stddef.h>
#include <cuda.h>
#include <cublas_v2.h>
#include <cusolverDn.h>
#include <cuda_runtime_api.h>

// The functions, one X(library, name) each.
#define RC_FUNCTIONS(X)                           \
	X(driver, cuInit)                         \
	X(driver, cuDriverGetVersion)             \
	X(driver, cuGetErrorName)                 \
	X(driver, cuDeviceGetCount)               \
	X(driver, cuDeviceGet)                    \
	X(driver, cuDeviceGetName)                \
	X(driver, cuDevicePrimaryCtxRetain)       \
	X(driver, cuDevicePrimaryCtxRelease)      \
	X(driver, cuCtxPushCurrent)               \
	X(driver, cuCtxPopCurrent)                \
	X(driver, cuMemAlloc)                     \
	X(driver, cuMemGetInfo)                   \
	X(driver, cuPointerGetAttribute)          \
	X(driver, cuMemFree)                      \
	X(driver, cuMemcpyHtoDAsync)              \
	X(driver, cuMemcpyDtoHAsync)              \
	X(driver, cuMemcpyDtoDAsync)              \
	X(driver, cuMemsetD8Async)                \
	X(driver, cuStreamCreate)                 \
	X(driver, cuStreamDestroy)                \
	X(driver, cuStreamSynchronize)            \
	X(driver, cuStreamWaitEvent)              \
	X(driver, cuEventCreate)                  \
	X(driver, cuEventRecord)                  \
	X(driver, cuEventSynchronize)             \
	X(driver, cuEventDestroy)                 \
	X(driver, cuModuleLoadData)               \
	X(driver, cuModuleUnload)                 \
	X(driver, cuModuleGetFunction)            \
	X(driver, cuLaunchKernel)                 \
	X(blas, cublasCreate)                     \
	X(blas, cublasDestroy)                    \
	X(blas, cublasSetStream)                  \
	X(blas, cublasSetMathMode)                \
	X(blas, cublasGetStatusName)              \
	X(blas, cublasDaxpy)                      \
	X(blas, cublasDgemv)                      \
	X(blas, cublasDsymv)                      \
	X(blas, cublasSgemm)                      \
	X(blas, cublasDtrsv)                      \
	X(solver, cusolverDnCreate)               \
	X(solver, cusolverDnDestroy)              \
	X(solver, cusolverDnSetStream)            \
	X(solver, cusolverDnDpotrf_bufferSize)    \
	X(solver, cusolverDnDpotrf)               \
	X(solver, cusolverDnDpotrs)

// The function only the benchmarks' timers need, resolved if the driver
// has it: cuEventElapsedTime is cuEventElapsedTime_v2 in CUDA 13's
// header, which drivers older than CUDA 12.8's lack.
#define RC_OPTIONAL(X)                            \
	X(driver, cuEventElapsedTime)

// The CUDA runtime's allocation functions, which only the tests use (to
// allocate device memory as Triton does), resolved by rc_open_runtime from
// libcudart when they ask for it.
#define RC_RUNTIME(X)                             \
	X(runtime, cudaMalloc)                    \
	X(runtime, cudaFree)                      \
	X(runtime, cudaGetErrorName)

#define RC_FIELD(lib, name) __typeof__(&name) name;
typedef struct {
	RC_FUNCTIONS(RC_FIELD)
	RC_OPTIONAL(RC_FIELD)
	RC_RUNTIME(RC_FIELD)
} rc_api;
#undef RC_FIELD

// rc_has_events reports whether the optional functions resolved.
int rc_has_events(void);

extern rc_api rc;

// rc_open opens the libraries and resolves every function. It returns 0,
// or -1 with what failed in why (why_len bytes at most).
int rc_open(char *why, size_t why_len);

// rc_open_runtime opens the CUDA runtime (libcudart) and resolves
// RC_RUNTIME's functions, after rc_open. It returns 0, or -1 with why.
int rc_open_runtime(char *why, size_t why_len);

// rc_library_names returns the sonames tried for library which (0: the
// driver, 1: cuBLAS, 2: cuSOLVER, 3: the runtime), in order,
// NULL-terminated, for a driver that supports CUDA driver_version
// (1000·major + 10·minor; 0 when unknown): the libraries of the driver's
// CUDA major version first, then older ones it also runs; never a newer
// major's, which that driver cannot run.
const char **rc_library_names(int which, int driver_version);

// rc_solver_status_name returns the name of a cuSOLVER status (cuSOLVER
// has no function for it), or NULL for one it does not know.
const char *rc_solver_status_name(cusolverStatus_t s);

#endif
