// Calls through the pointers of rc (shim.h), one function each, since Go
// cannot call a C function pointer. Device memory is passed as CUdeviceptr
// and converted here to the pointer type the library declares.

#ifndef REACT_CUDA_CALLS_H
#define REACT_CUDA_CALLS_H

#include <stdint.h>

#include "shim.h"

static inline CUresult rc_cuInit(unsigned int flags) { return rc.cuInit(flags); }
static inline CUresult rc_cuDriverGetVersion(int *v) { return rc.cuDriverGetVersion(v); }
static inline CUresult rc_cuGetErrorName(CUresult e, const char **s) { return rc.cuGetErrorName(e, s); }
static inline CUresult rc_cuDeviceGetCount(int *n) { return rc.cuDeviceGetCount(n); }
static inline CUresult rc_cuDeviceGet(CUdevice *d, int ordinal) { return rc.cuDeviceGet(d, ordinal); }
static inline CUresult rc_cuDeviceGetName(char *name, int len, CUdevice d) { return rc.cuDeviceGetName(name, len, d); }
static inline CUresult rc_cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) { return rc.cuDevicePrimaryCtxRetain(c, d); }
static inline CUresult rc_cuDevicePrimaryCtxRelease(CUdevice d) { return rc.cuDevicePrimaryCtxRelease(d); }
static inline CUresult rc_cuCtxPushCurrent(CUcontext c) { return rc.cuCtxPushCurrent(c); }
static inline CUresult rc_cuCtxPopCurrent(CUcontext *c) { return rc.cuCtxPopCurrent(c); }
static inline CUresult rc_cuMemAlloc(CUdeviceptr *p, size_t n) { return rc.cuMemAlloc(p, n); }
static inline CUresult rc_cuMemFree(CUdeviceptr p) { return rc.cuMemFree(p); }
static inline CUresult rc_cuMemGetInfo(size_t *free, size_t *total) { return rc.cuMemGetInfo(free, total); }
static inline CUresult rc_cuPointerGetAttribute(void *data, CUpointer_attribute a, CUdeviceptr p) { return rc.cuPointerGetAttribute(data, a, p); }
static inline CUresult rc_cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t n, CUstream s) { return rc.cuMemcpyHtoDAsync(dst, src, n, s); }
static inline CUresult rc_cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t n, CUstream s) { return rc.cuMemcpyDtoHAsync(dst, src, n, s); }
static inline CUresult rc_cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) { return rc.cuMemcpyDtoDAsync(dst, src, n, s); }
static inline CUresult rc_cuMemsetD8Async(CUdeviceptr p, unsigned char v, size_t n, CUstream s) { return rc.cuMemsetD8Async(p, v, n, s); }
static inline CUresult rc_cuStreamCreate(CUstream *s, unsigned int flags) { return rc.cuStreamCreate(s, flags); }
static inline CUresult rc_cuStreamDestroy(CUstream s) { return rc.cuStreamDestroy(s); }
static inline CUresult rc_cuStreamSynchronize(CUstream s) { return rc.cuStreamSynchronize(s); }
static inline CUresult rc_cuModuleLoadData(CUmodule *m, const void *image) { return rc.cuModuleLoadData(m, image); }
static inline CUresult rc_cuModuleUnload(CUmodule m) { return rc.cuModuleUnload(m); }
static inline CUresult rc_cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) { return rc.cuModuleGetFunction(f, m, name); }
// rc_launch_round queues round_f64_f32(dst, src, n, bad) (kernels.go) on
// stream s: the kernel's parameters are passed as an array of pointers to
// their values, built here.
static inline CUresult rc_launch_round(CUfunction f, unsigned int grid, unsigned int block, CUstream s,
				       CUdeviceptr dst, CUdeviceptr src, unsigned long long n, CUdeviceptr bad) {
	void *params[] = {&dst, &src, &n, &bad};
	return rc.cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, s, params, NULL);
}
static inline CUresult rc_cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags) { return rc.cuStreamWaitEvent(s, e, flags); }
static inline CUresult rc_cuEventCreate(CUevent *e, unsigned int flags) { return rc.cuEventCreate(e, flags); }
static inline CUresult rc_cuEventRecord(CUevent e, CUstream s) { return rc.cuEventRecord(e, s); }
static inline CUresult rc_cuEventSynchronize(CUevent e) { return rc.cuEventSynchronize(e); }
static inline CUresult rc_cuEventElapsedTime(float *ms, CUevent start, CUevent end) { return rc.cuEventElapsedTime(ms, start, end); }
static inline CUresult rc_cuEventDestroy(CUevent e) { return rc.cuEventDestroy(e); }
static inline cublasStatus_t rc_cublasCreate(cublasHandle_t *h) { return rc.cublasCreate(h); }
static inline cublasStatus_t rc_cublasDestroy(cublasHandle_t h) { return rc.cublasDestroy(h); }
static inline cublasStatus_t rc_cublasSetStream(cublasHandle_t h, CUstream s) { return rc.cublasSetStream(h, s); }
static inline cublasStatus_t rc_cublasSetMathMode(cublasHandle_t h, cublasMath_t m) { return rc.cublasSetMathMode(h, m); }
static inline const char *rc_cublasGetStatusName(cublasStatus_t s) { return rc.cublasGetStatusName(s); }
static inline cublasStatus_t rc_cublasDaxpy(cublasHandle_t h, int n, const double *alpha, CUdeviceptr x, int incx, CUdeviceptr y, int incy) { return rc.cublasDaxpy(h, n, alpha, (const double *)x, incx, (double *)y, incy); }
static inline cublasStatus_t rc_cublasDgemv(cublasHandle_t h, cublasOperation_t trans, int m, int n, const double *alpha, CUdeviceptr a, int lda, CUdeviceptr x, int incx, const double *beta, CUdeviceptr y, int incy) { return rc.cublasDgemv(h, trans, m, n, alpha, (const double *)a, lda, (const double *)x, incx, beta, (double *)y, incy); }
static inline cublasStatus_t rc_cublasDsymv(cublasHandle_t h, cublasFillMode_t uplo, int n, const double *alpha, CUdeviceptr a, int lda, CUdeviceptr x, int incx, const double *beta, CUdeviceptr y, int incy) { return rc.cublasDsymv(h, uplo, n, alpha, (const double *)a, lda, (const double *)x, incx, beta, (double *)y, incy); }
static inline cublasStatus_t rc_cublasDtrsv(cublasHandle_t h, cublasFillMode_t uplo, cublasOperation_t trans, cublasDiagType_t diag, int n, CUdeviceptr a, int lda, CUdeviceptr x, int incx) { return rc.cublasDtrsv(h, uplo, trans, diag, n, (const double *)a, lda, (double *)x, incx); }
static inline cublasStatus_t rc_cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const float *alpha, CUdeviceptr a, int lda, CUdeviceptr b, int ldb, const float *beta, CUdeviceptr c, int ldc) { return rc.cublasSgemm(h, ta, tb, m, n, k, alpha, (const float *)a, lda, (const float *)b, ldb, beta, (float *)c, ldc); }
static inline cusolverStatus_t rc_cusolverDnCreate(cusolverDnHandle_t *h) { return rc.cusolverDnCreate(h); }
static inline cusolverStatus_t rc_cusolverDnDestroy(cusolverDnHandle_t h) { return rc.cusolverDnDestroy(h); }
static inline cusolverStatus_t rc_cusolverDnSetStream(cusolverDnHandle_t h, CUstream s) { return rc.cusolverDnSetStream(h, s); }
static inline cusolverStatus_t rc_cusolverDnDpotrf_bufferSize(cusolverDnHandle_t h, cublasFillMode_t uplo, int n, CUdeviceptr a, int lda, int *lwork) { return rc.cusolverDnDpotrf_bufferSize(h, uplo, n, (double *)a, lda, lwork); }
static inline cusolverStatus_t rc_cusolverDnDpotrf(cusolverDnHandle_t h, cublasFillMode_t uplo, int n, CUdeviceptr a, int lda, CUdeviceptr work, int lwork, CUdeviceptr info) { return rc.cusolverDnDpotrf(h, uplo, n, (double *)a, lda, (double *)work, lwork, (int *)info); }
static inline cusolverStatus_t rc_cusolverDnDpotrs(cusolverDnHandle_t h, cublasFillMode_t uplo, int n, int nrhs, CUdeviceptr a, int lda, CUdeviceptr b, int ldb, CUdeviceptr info) { return rc.cusolverDnDpotrs(h, uplo, n, nrhs, (const double *)a, lda, (double *)b, ldb, (int *)info); }

static inline cudaError_t rc_cudaMalloc(CUdeviceptr *p, size_t n) {
	void *v = NULL;
	cudaError_t r = rc.cudaMalloc(&v, n);
	*p = (CUdeviceptr)(uintptr_t)v;
	return r;
}
static inline cudaError_t rc_cudaFree(CUdeviceptr p) { return rc.cudaFree((void *)(uintptr_t)p); }
static inline const char *rc_cudaGetErrorName(cudaError_t e) { return rc.cudaGetErrorName(e); }

#endif
