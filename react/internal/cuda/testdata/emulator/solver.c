// The cuSOLVER functions (libcusolver.so.12) the binding calls, emulated:
// DPOTRF and DPOTRS read only the uplo triangle (DPOTRF writes only it),
// the workspace is checked against what _bufferSize asked for and used,
// and devInfo is written in device memory when the queued call executes.

#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "emu.h"

#define L emu_lock()
#define U(r)                            \
	do {                            \
		cusolverStatus_t r_ = (r); \
		emu_unlock();           \
		return r_;              \
	} while (0)

static cusolverStatus_t need_handle(const char *fn, cusolverDnHandle_t h, struct CUstream_st **s) {
	if (!emu_valid(h, OBJ_SOLVER)) {
		emu_report(fn, "%p is not a live cuSOLVER handle: CUSOLVER_STATUS_NOT_INITIALIZED", (void *)h);
		return CUSOLVER_STATUS_NOT_INITIALIZED;
	}
	struct CUctx_st *c = emu_current();
	if (c != h->ctx) {
		emu_report(fn, "%s (thread %lu): CUSOLVER_STATUS_NOT_INITIALIZED",
		           c == NULL ? "no context is current on this thread" : "the current context is not the handle's",
		           (unsigned long)pthread_self());
		return CUSOLVER_STATUS_NOT_INITIALIZED;
	}
	if (c->sticky != CUDA_SUCCESS) {
		return CUSOLVER_STATUS_EXECUTION_FAILED;
	}
	if (s != NULL && emu_stream(fn, c, h->stream, s) != CUDA_SUCCESS) {
		return CUSOLVER_STATUS_EXECUTION_FAILED;
	}
	return CUSOLVER_STATUS_SUCCESS;
}

cusolverStatus_t CUSOLVERAPI cusolverDnCreate(cusolverDnHandle_t *handle) {
	L;
	struct CUctx_st *c = emu_current();
	if (!emu_initialized() || c == NULL || !c->active) {
		emu_report("cusolverDnCreate", "no context is current on this thread: CUSOLVER_STATUS_NOT_INITIALIZED");
		U(CUSOLVER_STATUS_NOT_INITIALIZED);
	}
	if (handle == NULL) {
		U(CUSOLVER_STATUS_INVALID_VALUE);
	}
	struct cusolverDnContext *h = calloc(1, sizeof *h);
	if (h == NULL) {
		U(CUSOLVER_STATUS_ALLOC_FAILED);
	}
	emu_register(&h->obj, OBJ_SOLVER);
	h->ctx = c;
	*handle = h;
	U(CUSOLVER_STATUS_SUCCESS);
}

cusolverStatus_t CUSOLVERAPI cusolverDnDestroy(cusolverDnHandle_t handle) {
	L;
	if (!emu_valid(handle, OBJ_SOLVER)) {
		emu_misuse("cusolverDnDestroy", "%p is not a live cuSOLVER handle (destroyed twice?)", (void *)handle);
		U(CUSOLVER_STATUS_NOT_INITIALIZED);
	}
	struct CUstream_st *s;
	cusolverStatus_t st = need_handle("cusolverDnDestroy", handle, &s);
	if (st == CUSOLVER_STATUS_SUCCESS) {
		emu_run(s, UINT64_MAX);
	}
	handle->obj.alive = 0;
	U(st == CUSOLVER_STATUS_EXECUTION_FAILED ? CUSOLVER_STATUS_SUCCESS : st);
}

cusolverStatus_t CUSOLVERAPI cusolverDnSetStream(cusolverDnHandle_t handle, cudaStream_t streamId) {
	L;
	cusolverStatus_t st = need_handle("cusolverDnSetStream", handle, NULL);
	if (st != CUSOLVER_STATUS_SUCCESS) {
		U(st);
	}
	struct CUstream_st *s;
	if (emu_stream("cusolverDnSetStream", handle->ctx, streamId, &s) != CUDA_SUCCESS) {
		U(CUSOLVER_STATUS_INVALID_VALUE);
	}
	handle->stream = s->legacy ? NULL : s;
	U(CUSOLVER_STATUS_SUCCESS);
}

// illegal reports an illegal i-th parameter (the handle not counted, as
// cuSOLVER counts): devInfo receives -i when the call's stream runs, if
// info is device memory, and the call returns CUSOLVER_STATUS_INVALID_VALUE.
static CUresult run_info(emu_op *op) {
	int *info = emu_operand(op->ctx, op, "devInfo", op->p[0], 1, 4);
	if (info == NULL) {
		return CUDA_ERROR_ILLEGAL_ADDRESS;
	}
	*info = op->i[0];
	return CUDA_SUCCESS;
}

static cusolverStatus_t illegal(const char *fn, struct CUstream_st *s, int i, const char *what, const int *info) {
	emu_report(fn, "parameter %d: %s: CUSOLVER_STATUS_INVALID_VALUE (devInfo = %d)", i, what, -i);
	if (info != NULL && emu_range(s->ctx, (CUdeviceptr)info, 4) != NULL) {
		emu_op op = {.kind = OP_KERNEL, .fn = fn, .run = run_info, .i = {-i}, .p = {(CUdeviceptr)info}};
		emu_enqueue(s, &op);
	}
	return CUSOLVER_STATUS_INVALID_VALUE;
}

// potrf_lwork is the workspace DPOTRF asks for, in values.
static int potrf_lwork(int n) { return 64 + 32 * n; }

cusolverStatus_t CUSOLVERAPI cusolverDnDpotrf_bufferSize(cusolverDnHandle_t handle, cublasFillMode_t uplo, int n, double *A, int lda, int *Lwork) {
	L;
	const char *fn = "cusolverDnDpotrf_bufferSize";
	struct CUstream_st *s;
	cusolverStatus_t st = need_handle(fn, handle, &s);
	if (st != CUSOLVER_STATUS_SUCCESS) {
		U(st);
	}
	(void)A;
	if (uplo != CUBLAS_FILL_MODE_LOWER && uplo != CUBLAS_FILL_MODE_UPPER) {
		U(illegal(fn, s, 1, "uplo", NULL));
	}
	if (n < 0) {
		U(illegal(fn, s, 2, "n < 0", NULL));
	}
	if (lda < (n > 1 ? n : 1)) {
		U(illegal(fn, s, 4, "lda < max(1, n)", NULL));
	}
	if (Lwork == NULL) {
		U(illegal(fn, s, 5, "Lwork is NULL", NULL));
	}
	*Lwork = potrf_lwork(n);
	U(CUSOLVER_STATUS_SUCCESS);
}

// get and put read and write element (i, j), i >= j, of the lower
// triangle of a symmetric matrix stored as the uplo triangle.
static inline size_t at(int lower, int i, int j, int lda) {
	return lower ? (size_t)i + (size_t)j * lda : (size_t)j + (size_t)i * lda;
}

// packed copies the uplo triangle of the n×n matrix a into a packed,
// row-major lower triangle: row i (L(i,0..i)) starts at i(i+1)/2.
static double *packed(const double *a, int lower, int n, int lda) {
	double *l = malloc(((size_t)n * (n + 1) / 2 + 1) * sizeof *l);
	if (l == NULL) {
		abort();
	}
	for (int i = 0; i < n; i++) {
		double *li = l + (size_t)i * (i + 1) / 2;
		for (int j = 0; j <= i; j++) {
			li[j] = a[at(lower, i, j, lda)];
		}
	}
	return l;
}

static inline double dot(const double *x, const double *y, int n) {
	double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
	int k = 0;
	for (; k + 4 <= n; k += 4) {
		s0 += x[k] * y[k];
		s1 += x[k + 1] * y[k + 1];
		s2 += x[k + 2] * y[k + 2];
		s3 += x[k + 3] * y[k + 3];
	}
	for (; k < n; k++) {
		s0 += x[k] * y[k];
	}
	return (s0 + s1) + (s2 + s3);
}

static CUresult run_dpotrf(emu_op *op) {
	int lower = op->i[0] == CUBLAS_FILL_MODE_LOWER, n = op->i[1], lda = op->i[2], lwork = op->i[3];
	double *a = emu_operand(op->ctx, op, "A", op->p[0], emu_mat_extent(n, n, lda), 8);
	double *work = a == NULL ? NULL : emu_operand(op->ctx, op, "Workspace", op->p[1], (size_t)lwork, 8);
	int *info = work == NULL ? NULL : emu_operand(op->ctx, op, "devInfo", op->p[2], 1, 4);
	if (info == NULL) {
		return CUDA_ERROR_ILLEGAL_ADDRESS;
	}
	memset(work, 0xff, (size_t)lwork * 8); // the workspace is scratch
	// Cholesky-Banachiewicz on the packed copy: row i of L from the rows
	// above it.
	double *l = packed(a, lower, n, lda);
	int fail = 0;
	for (int i = 0; i < n && !fail; i++) {
		double *li = l + (size_t)i * (i + 1) / 2;
		for (int j = 0; j < i; j++) {
			const double *lj = l + (size_t)j * (j + 1) / 2;
			li[j] = (li[j] - dot(li, lj, j)) / lj[j];
		}
		double d = li[i] - dot(li, li, i);
		if (!(d > 0)) { // also NaN, as LAPACK
			fail = i + 1;
			li[i] = d;
			break;
		}
		li[i] = sqrt(d);
	}
	// Only the uplo triangle is written.
	for (int i = 0; i < n; i++) {
		const double *li = l + (size_t)i * (i + 1) / 2;
		for (int j = 0; j <= i; j++) {
			a[at(lower, i, j, lda)] = li[j];
		}
	}
	free(l);
	*info = fail;
	return CUDA_SUCCESS;
}

cusolverStatus_t CUSOLVERAPI cusolverDnDpotrf(cusolverDnHandle_t handle, cublasFillMode_t uplo, int n, double *A, int lda, double *Workspace,
                                              int Lwork, int *devInfo) {
	L;
	const char *fn = "cusolverDnDpotrf";
	struct CUstream_st *s;
	cusolverStatus_t st = need_handle(fn, handle, &s);
	if (st != CUSOLVER_STATUS_SUCCESS) {
		U(st);
	}
	if (uplo != CUBLAS_FILL_MODE_LOWER && uplo != CUBLAS_FILL_MODE_UPPER) {
		U(illegal(fn, s, 1, "uplo", devInfo));
	}
	if (n < 0) {
		U(illegal(fn, s, 2, "n < 0", devInfo));
	}
	if (lda < (n > 1 ? n : 1)) {
		U(illegal(fn, s, 4, "lda < max(1, n)", devInfo));
	}
	if (Lwork < potrf_lwork(n)) {
		U(illegal(fn, s, 6, "Lwork is less than cusolverDnDpotrf_bufferSize's", devInfo));
	}
	if (devInfo == NULL) {
		U(illegal(fn, s, 7, "devInfo is NULL", NULL));
	}
	emu_op op = {.kind = OP_KERNEL, .fn = fn, .run = run_dpotrf, .i = {uplo, n, lda, Lwork},
	             .p = {(CUdeviceptr)A, (CUdeviceptr)Workspace, (CUdeviceptr)devInfo}};
	emu_enqueue(s, &op);
	U(CUSOLVER_STATUS_SUCCESS);
}

static CUresult run_dpotrs(emu_op *op) {
	int lower = op->i[0] == CUBLAS_FILL_MODE_LOWER, n = op->i[1], nrhs = op->i[2], lda = op->i[3], ldb = op->i[4];
	const double *a = emu_operand(op->ctx, op, "A", op->p[0], emu_mat_extent(n, n, lda), 8);
	double *b = a == NULL ? NULL : emu_operand(op->ctx, op, "B", op->p[1], emu_mat_extent(n, nrhs, ldb), 8);
	int *info = b == NULL ? NULL : emu_operand(op->ctx, op, "devInfo", op->p[2], 1, 4);
	if (info == NULL) {
		return CUDA_ERROR_ILLEGAL_ADDRESS;
	}
	if (n > 0 && nrhs > 0) {
		double *l = packed(a, lower, n, lda);
		// The right-hand sides NB at a time, row-major in x (n × nb), so
		// that each step is an AXPY of contiguous rows.
		enum { NB = 32 };
		double *x = malloc((size_t)n * NB * sizeof *x);
		if (x == NULL) {
			abort();
		}
		for (int c0 = 0; c0 < nrhs; c0 += NB) {
			int nb = c0 + NB <= nrhs ? NB : nrhs - c0;
			for (int c = 0; c < nb; c++) {
				const double *bc = b + (size_t)(c0 + c) * ldb;
				for (int i = 0; i < n; i++) {
					x[(size_t)i * nb + c] = bc[i];
				}
			}
			// L y = b.
			for (int i = 0; i < n; i++) {
				const double *li = l + (size_t)i * (i + 1) / 2;
				double *xi = x + (size_t)i * nb;
				for (int k = 0; k < i; k++) {
					const double *xk = x + (size_t)k * nb;
					double lik = li[k];
					for (int c = 0; c < nb; c++) {
						xi[c] -= lik * xk[c];
					}
				}
				for (int c = 0; c < nb; c++) {
					xi[c] /= li[i];
				}
			}
			// Lᵀ x = y, column by column of Lᵀ (row by row of L).
			for (int i = n - 1; i >= 0; i--) {
				const double *li = l + (size_t)i * (i + 1) / 2;
				double *xi = x + (size_t)i * nb;
				for (int c = 0; c < nb; c++) {
					xi[c] /= li[i];
				}
				for (int k = 0; k < i; k++) {
					double *xk = x + (size_t)k * nb;
					double lik = li[k];
					for (int c = 0; c < nb; c++) {
						xk[c] -= lik * xi[c];
					}
				}
			}
			for (int c = 0; c < nb; c++) {
				double *bc = b + (size_t)(c0 + c) * ldb;
				for (int i = 0; i < n; i++) {
					bc[i] = x[(size_t)i * nb + c];
				}
			}
		}
		free(x);
		free(l);
	}
	*info = 0;
	return CUDA_SUCCESS;
}

cusolverStatus_t CUSOLVERAPI cusolverDnDpotrs(cusolverDnHandle_t handle, cublasFillMode_t uplo, int n, int nrhs, const double *A, int lda,
                                              double *B, int ldb, int *devInfo) {
	L;
	const char *fn = "cusolverDnDpotrs";
	struct CUstream_st *s;
	cusolverStatus_t st = need_handle(fn, handle, &s);
	if (st != CUSOLVER_STATUS_SUCCESS) {
		U(st);
	}
	if (uplo != CUBLAS_FILL_MODE_LOWER && uplo != CUBLAS_FILL_MODE_UPPER) {
		U(illegal(fn, s, 1, "uplo", devInfo));
	}
	if (n < 0) {
		U(illegal(fn, s, 2, "n < 0", devInfo));
	}
	if (nrhs < 0) {
		U(illegal(fn, s, 3, "nrhs < 0", devInfo));
	}
	if (lda < (n > 1 ? n : 1)) {
		U(illegal(fn, s, 5, "lda < max(1, n)", devInfo));
	}
	if (ldb < (n > 1 ? n : 1)) {
		U(illegal(fn, s, 7, "ldb < max(1, n)", devInfo));
	}
	if (devInfo == NULL) {
		U(illegal(fn, s, 8, "devInfo is NULL", NULL));
	}
	emu_op op = {.kind = OP_KERNEL, .fn = fn, .run = run_dpotrs, .i = {uplo, n, nrhs, lda, ldb},
	             .p = {(CUdeviceptr)A, (CUdeviceptr)B, (CUdeviceptr)devInfo}};
	emu_enqueue(s, &op);
	U(CUSOLVER_STATUS_SUCCESS);
}
