// The cuBLAS functions (libcublas.so.13) the binding calls, emulated:
// column-major, op(A) as documented, leading dimensions validated as
// cuBLAS does, each operand bounds-checked against one allocation when the
// queued call executes, DSYMV reading only the uplo triangle, SGEMM
// rounding its inputs as the handle's math mode allows.

#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "emu.h"

#define L emu_lock()
#define U(r)                          \
	do {                          \
		cublasStatus_t r_ = (r); \
		emu_unlock();         \
		return r_;            \
	} while (0)

// need_handle checks a call on handle h: a live handle, whose context is
// current on this thread and has no sticky error. The stream the call
// queues on is returned in *s when s is not NULL.
static cublasStatus_t need_handle(const char *fn, cublasHandle_t h, struct CUstream_st **s) {
	if (!emu_valid(h, OBJ_BLAS)) {
		emu_report(fn, "%p is not a live cuBLAS handle: CUBLAS_STATUS_NOT_INITIALIZED", (void *)h);
		return CUBLAS_STATUS_NOT_INITIALIZED;
	}
	struct CUctx_st *c = emu_current();
	if (c != h->ctx) {
		emu_report(fn, "%s (thread %lu): CUBLAS_STATUS_NOT_INITIALIZED",
		           c == NULL ? "no context is current on this thread" : "the current context is not the handle's",
		           (unsigned long)pthread_self());
		return CUBLAS_STATUS_NOT_INITIALIZED;
	}
	if (c->sticky != CUDA_SUCCESS) {
		return CUBLAS_STATUS_EXECUTION_FAILED;
	}
	if (s != NULL && emu_stream(fn, c, h->stream, s) != CUDA_SUCCESS) {
		return CUBLAS_STATUS_EXECUTION_FAILED;
	}
	return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t invalid(const char *fn, const char *what) {
	emu_report(fn, "%s: CUBLAS_STATUS_INVALID_VALUE", what);
	return CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t CUBLASWINAPI cublasCreate(cublasHandle_t *handle) {
	L;
	struct CUctx_st *c = emu_current();
	if (!emu_initialized() || c == NULL || !c->active) {
		emu_report("cublasCreate", "no context is current on this thread: CUBLAS_STATUS_NOT_INITIALIZED");
		U(CUBLAS_STATUS_NOT_INITIALIZED);
	}
	if (handle == NULL) {
		U(CUBLAS_STATUS_INVALID_VALUE);
	}
	struct cublasContext *h = calloc(1, sizeof *h);
	if (h == NULL) {
		U(CUBLAS_STATUS_ALLOC_FAILED);
	}
	emu_register(&h->obj, OBJ_BLAS);
	h->ctx = c;
	h->math = CUBLAS_DEFAULT_MATH;
	*handle = h;
	U(CUBLAS_STATUS_SUCCESS);
}

cublasStatus_t CUBLASWINAPI cublasDestroy(cublasHandle_t handle) {
	L;
	if (!emu_valid(handle, OBJ_BLAS)) {
		emu_misuse("cublasDestroy", "%p is not a live cuBLAS handle (destroyed twice?)", (void *)handle);
		U(CUBLAS_STATUS_NOT_INITIALIZED);
	}
	struct CUstream_st *s;
	cublasStatus_t st = need_handle("cublasDestroy", handle, &s);
	if (st == CUBLAS_STATUS_SUCCESS) {
		emu_run(s, UINT64_MAX); // cublasDestroy synchronises
	}
	handle->obj.alive = 0;
	U(st == CUBLAS_STATUS_EXECUTION_FAILED ? CUBLAS_STATUS_SUCCESS : st);
}

cublasStatus_t CUBLASWINAPI cublasSetStream(cublasHandle_t handle, cudaStream_t streamId) {
	L;
	cublasStatus_t st = need_handle("cublasSetStream", handle, NULL);
	if (st != CUBLAS_STATUS_SUCCESS) {
		U(st);
	}
	struct CUstream_st *s;
	if (emu_stream("cublasSetStream", handle->ctx, streamId, &s) != CUDA_SUCCESS) {
		U(CUBLAS_STATUS_INVALID_VALUE);
	}
	handle->stream = s->legacy ? NULL : s;
	U(CUBLAS_STATUS_SUCCESS);
}

cublasStatus_t CUBLASWINAPI cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
	L;
	cublasStatus_t st = need_handle("cublasSetMathMode", handle, NULL);
	if (st != CUBLAS_STATUS_SUCCESS) {
		U(st);
	}
	switch ((int)mode & ~(int)CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION) {
	case CUBLAS_DEFAULT_MATH:
	case CUBLAS_TENSOR_OP_MATH:
	case CUBLAS_PEDANTIC_MATH:
	case CUBLAS_TF32_TENSOR_OP_MATH:
	case CUBLAS_FP32_EMULATED_BF16X9_MATH:
	case CUBLAS_FP64_EMULATED_FIXEDPOINT_MATH:
		handle->math = mode;
		U(CUBLAS_STATUS_SUCCESS);
	}
	U(invalid("cublasSetMathMode", "unknown math mode"));
}

cublasStatus_t CUBLASWINAPI cublasGetMathMode(cublasHandle_t handle, cublasMath_t *mode) {
	L;
	if (!emu_valid(handle, OBJ_BLAS)) {
		U(CUBLAS_STATUS_NOT_INITIALIZED);
	}
	if (mode == NULL) {
		U(CUBLAS_STATUS_INVALID_VALUE);
	}
	*mode = handle->math;
	U(CUBLAS_STATUS_SUCCESS);
}

const char *CUBLASWINAPI cublasGetStatusName(cublasStatus_t status) {
	switch (status) {
#define S(x)      \
	case x:   \
		return #x;
		S(CUBLAS_STATUS_SUCCESS)
		S(CUBLAS_STATUS_NOT_INITIALIZED)
		S(CUBLAS_STATUS_ALLOC_FAILED)
		S(CUBLAS_STATUS_INVALID_VALUE)
		S(CUBLAS_STATUS_ARCH_MISMATCH)
		S(CUBLAS_STATUS_MAPPING_ERROR)
		S(CUBLAS_STATUS_EXECUTION_FAILED)
		S(CUBLAS_STATUS_INTERNAL_ERROR)
		S(CUBLAS_STATUS_NOT_SUPPORTED)
		S(CUBLAS_STATUS_LICENSE_ERROR)
#undef S
	}
	return "<unknown>";
}

const char *CUBLASWINAPI cublasGetStatusString(cublasStatus_t status) { return cublasGetStatusName(status); }

// queue enqueues a kernel on the handle's stream.
static void queue(struct CUstream_st *s, const char *fn, CUresult (*run)(emu_op *), emu_op *op) {
	op->kind = OP_KERNEL;
	op->fn = fn;
	op->run = run;
	emu_enqueue(s, op);
}

// ---- DAXPY ----

// strided returns the index of a BLAS vector's i-th value (a negative
// increment starts from the far end, as in the reference BLAS).
static inline size_t strided(int i, int n, int inc) {
	return inc >= 0 ? (size_t)i * (size_t)inc : (size_t)(n - 1 - i) * (size_t)(-inc);
}

static CUresult run_daxpy(emu_op *op) {
	int n = op->i[0], incx = op->i[1], incy = op->i[2];
	double alpha = op->d[0];
	const double *x = emu_operand(op->ctx, op, "x", op->p[0], emu_vec_extent(n, incx), 8);
	double *y = x == NULL ? NULL : emu_operand(op->ctx, op, "y", op->p[1], emu_vec_extent(n, incy), 8);
	if (y == NULL) {
		return CUDA_ERROR_ILLEGAL_ADDRESS;
	}
	if (alpha == 0) {
		return CUDA_SUCCESS; // as the reference BLAS: y unchanged
	}
	for (int i = 0; i < n; i++) {
		y[strided(i, n, incy)] += alpha * x[strided(i, n, incx)];
	}
	return CUDA_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasDaxpy(cublasHandle_t handle, int n, const double *alpha, const double *x, int incx, double *y, int incy) {
	L;
	struct CUstream_st *s;
	cublasStatus_t st = need_handle("cublasDaxpy", handle, &s);
	if (st != CUBLAS_STATUS_SUCCESS) {
		U(st);
	}
	if (alpha == NULL) {
		U(invalid("cublasDaxpy", "alpha is NULL"));
	}
	if (n <= 0) {
		U(CUBLAS_STATUS_SUCCESS);
	}
	emu_op op = {.i = {n, incx, incy}, .d = {*alpha}, .p = {(CUdeviceptr)x, (CUdeviceptr)y}};
	queue(s, "cublasDaxpy", run_daxpy, &op);
	U(CUBLAS_STATUS_SUCCESS);
}

// ---- DGEMV ----

// run_dgemv computes y = alpha op(A) x + beta y for the m×n A (column-major,
// leading dimension lda); beta 0 does not read y (NaN in y stays out).
static CUresult run_dgemv(emu_op *op) {
	int trans = op->i[0] != CUBLAS_OP_N, m = op->i[1], n = op->i[2], lda = op->i[3], incx = op->i[4], incy = op->i[5];
	double alpha = op->d[0], beta = op->d[1];
	int lx = trans ? m : n, ly = trans ? n : m;
	const double *a = emu_operand(op->ctx, op, "A", op->p[0], emu_mat_extent(m, n, lda), 8);
	const double *x = a == NULL ? NULL : emu_operand(op->ctx, op, "x", op->p[1], emu_vec_extent(lx, incx), 8);
	double *y = x == NULL ? NULL : emu_operand(op->ctx, op, "y", op->p[2], emu_vec_extent(ly, incy), 8);
	if (y == NULL) {
		return CUDA_ERROR_ILLEGAL_ADDRESS;
	}
	for (int i = 0; i < ly; i++) {
		double sum = 0;
		for (int k = 0; k < lx; k++) {
			double aik = trans ? a[(size_t)k + (size_t)i * (size_t)lda] : a[(size_t)i + (size_t)k * (size_t)lda];
			sum += aik * x[strided(k, lx, incx)];
		}
		double *yi = &y[strided(i, ly, incy)];
		*yi = alpha * sum + (beta == 0 ? 0 : beta * *yi);
	}
	return CUDA_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasDgemv(cublasHandle_t handle, cublasOperation_t trans, int m, int n, const double *alpha, const double *A,
                                        int lda, const double *x, int incx, const double *beta, double *y, int incy) {
	L;
	const char *fn = "cublasDgemv";
	struct CUstream_st *s;
	cublasStatus_t st = need_handle(fn, handle, &s);
	if (st != CUBLAS_STATUS_SUCCESS) {
		U(st);
	}
	if (trans != CUBLAS_OP_N && trans != CUBLAS_OP_T && trans != CUBLAS_OP_C) {
		U(invalid(fn, "trans is not CUBLAS_OP_N, _T or _C"));
	}
	if (m < 0 || n < 0) {
		U(invalid(fn, "m < 0 or n < 0"));
	}
	if (lda < (m > 1 ? m : 1)) {
		U(invalid(fn, "lda < max(1, m)"));
	}
	if (incx == 0 || incy == 0) {
		U(invalid(fn, "incx or incy is 0"));
	}
	if (alpha == NULL || beta == NULL) {
		U(invalid(fn, "alpha or beta is NULL"));
	}
	if (m == 0 || n == 0 || (*alpha == 0 && *beta == 1)) {
		U(CUBLAS_STATUS_SUCCESS);
	}
	emu_op op = {.i = {trans, m, n, lda, incx, incy}, .d = {*alpha, *beta}, .p = {(CUdeviceptr)A, (CUdeviceptr)x, (CUdeviceptr)y}};
	queue(s, fn, run_dgemv, &op);
	U(CUBLAS_STATUS_SUCCESS);
}

// ---- DSYMV ----

static CUresult run_dsymv(emu_op *op) {
	int lower = op->i[0] == CUBLAS_FILL_MODE_LOWER, n = op->i[1], lda = op->i[2], incx = op->i[3], incy = op->i[4];
	double alpha = op->d[0], beta = op->d[1];
	const double *a = emu_operand(op->ctx, op, "A", op->p[0], emu_mat_extent(n, n, lda), 8);
	const double *x = a == NULL ? NULL : emu_operand(op->ctx, op, "x", op->p[1], emu_vec_extent(n, incx), 8);
	double *y = x == NULL ? NULL : emu_operand(op->ctx, op, "y", op->p[2], emu_vec_extent(n, incy), 8);
	if (y == NULL) {
		return CUDA_ERROR_ILLEGAL_ADDRESS;
	}
	double *xv = malloc(2 * (size_t)n * sizeof *xv);
	if (xv == NULL) {
		abort();
	}
	double *yv = xv + n;
	for (int i = 0; i < n; i++) {
		xv[i] = x[strided(i, n, incx)];
		yv[i] = beta == 0 ? 0 : beta * y[strided(i, n, incy)]; // beta 0: y is not read
	}
	if (alpha != 0) {
		// Only the uplo triangle of A is read: A(i,j) at a[i + j*lda].
		for (int j = 0; j < n; j++) {
			const double *col = a + (size_t)j * (size_t)lda;
			double t1 = alpha * xv[j], t2 = 0;
			int i0 = lower ? j + 1 : 0, i1 = lower ? n : j;
			for (int i = i0; i < i1; i++) {
				yv[i] += t1 * col[i];
				t2 += col[i] * xv[i];
			}
			yv[j] += t1 * col[j] + alpha * t2;
		}
	}
	for (int i = 0; i < n; i++) {
		y[strided(i, n, incy)] = yv[i];
	}
	free(xv);
	return CUDA_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasDsymv(cublasHandle_t handle, cublasFillMode_t uplo, int n, const double *alpha, const double *A, int lda,
                                        const double *x, int incx, const double *beta, double *y, int incy) {
	L;
	const char *fn = "cublasDsymv";
	struct CUstream_st *s;
	cublasStatus_t st = need_handle(fn, handle, &s);
	if (st != CUBLAS_STATUS_SUCCESS) {
		U(st);
	}
	if (uplo != CUBLAS_FILL_MODE_LOWER && uplo != CUBLAS_FILL_MODE_UPPER) {
		U(invalid(fn, "uplo is neither CUBLAS_FILL_MODE_LOWER nor CUBLAS_FILL_MODE_UPPER"));
	}
	if (n < 0) {
		U(invalid(fn, "n < 0"));
	}
	if (lda < (n > 1 ? n : 1)) {
		U(invalid(fn, "lda < max(1, n)"));
	}
	if (incx == 0 || incy == 0) {
		U(invalid(fn, "incx or incy is 0"));
	}
	if (alpha == NULL || beta == NULL) {
		U(invalid(fn, "alpha or beta is NULL"));
	}
	if (n == 0 || (*alpha == 0 && *beta == 1)) {
		U(CUBLAS_STATUS_SUCCESS);
	}
	emu_op op = {.i = {uplo, n, lda, incx, incy}, .d = {*alpha, *beta}, .p = {(CUdeviceptr)A, (CUdeviceptr)x, (CUdeviceptr)y}};
	queue(s, fn, run_dsymv, &op);
	U(CUBLAS_STATUS_SUCCESS);
}

// ---- DTRSV ----

// run_dtrsv solves op(A) x = b in place of x for the triangular n×n A
// whose uplo triangle (column-major, leading dimension lda) is read, and
// only that triangle (the diagonal too, unless unit).
static CUresult run_dtrsv(emu_op *op) {
	int lower = op->i[0] == CUBLAS_FILL_MODE_LOWER, trans = op->i[1] != CUBLAS_OP_N, unit = op->i[2] == CUBLAS_DIAG_UNIT;
	int n = op->i[3], lda = op->i[4], incx = op->i[5];
	const double *a = emu_operand(op->ctx, op, "A", op->p[0], emu_mat_extent(n, n, lda), 8);
	double *x = a == NULL ? NULL : emu_operand(op->ctx, op, "x", op->p[1], emu_vec_extent(n, incx), 8);
	if (x == NULL) {
		return CUDA_ERROR_ILLEGAL_ADDRESS;
	}
	double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
	if (v == NULL) {
		abort();
	}
	for (int i = 0; i < n; i++) {
		v[i] = x[strided(i, n, incx)];
	}
#define A_(i, j) a[(size_t)(i) + (size_t)(j) * (size_t)lda]
	// op(A) is lower triangular when (lower and not trans) or (upper and
	// trans): forward substitution; else backward. op(A)(i,j) is A(i,j),
	// or A(j,i) transposed: either way in the stored triangle.
	int forward = lower != trans;
	for (int k = 0; k < n; k++) {
		int i = forward ? k : n - 1 - k;
		double sum = v[i];
		int j0 = forward ? 0 : i + 1, j1 = forward ? i : n;
		for (int j = j0; j < j1; j++) {
			sum -= (trans ? A_(j, i) : A_(i, j)) * v[j];
		}
		v[i] = unit ? sum : sum / A_(i, i);
	}
#undef A_
	for (int i = 0; i < n; i++) {
		x[strided(i, n, incx)] = v[i];
	}
	free(v);
	return CUDA_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasDtrsv(cublasHandle_t handle, cublasFillMode_t uplo, cublasOperation_t trans, cublasDiagType_t diag, int n,
                                        const double *A, int lda, double *x, int incx) {
	L;
	const char *fn = "cublasDtrsv";
	struct CUstream_st *s;
	cublasStatus_t st = need_handle(fn, handle, &s);
	if (st != CUBLAS_STATUS_SUCCESS) {
		U(st);
	}
	if (uplo != CUBLAS_FILL_MODE_LOWER && uplo != CUBLAS_FILL_MODE_UPPER) {
		U(invalid(fn, "uplo is neither CUBLAS_FILL_MODE_LOWER nor CUBLAS_FILL_MODE_UPPER"));
	}
	if (trans != CUBLAS_OP_N && trans != CUBLAS_OP_T && trans != CUBLAS_OP_C) {
		U(invalid(fn, "trans is not an operation"));
	}
	if (diag != CUBLAS_DIAG_UNIT && diag != CUBLAS_DIAG_NON_UNIT) {
		U(invalid(fn, "diag is neither CUBLAS_DIAG_UNIT nor CUBLAS_DIAG_NON_UNIT"));
	}
	if (n < 0) {
		U(invalid(fn, "n < 0"));
	}
	if (lda < (n > 1 ? n : 1)) {
		U(invalid(fn, "lda < max(1, n)"));
	}
	if (incx == 0) {
		U(invalid(fn, "incx is 0"));
	}
	if (n == 0) {
		U(CUBLAS_STATUS_SUCCESS);
	}
	emu_op op = {.i = {uplo, trans, diag, n, lda, incx}, .p = {(CUdeviceptr)A, (CUdeviceptr)x}};
	queue(s, fn, run_dtrsv, &op);
	U(CUBLAS_STATUS_SUCCESS);
}

// ---- SGEMM ----

enum { ROUND_FP32, ROUND_TF32, ROUND_FP16 };

// round_tf32 rounds to TF32: 10 bits of mantissa (to nearest, even).
static inline float round_tf32(float x) {
	uint32_t u;
	memcpy(&u, &x, 4);
	if ((u & 0x7f800000u) != 0x7f800000u) {
		u += 0xfffu + ((u >> 13) & 1u);
		u &= 0xffffe000u;
	}
	memcpy(&x, &u, 4);
	return x;
}

static inline float round_input(float x, int mode) {
	switch (mode) {
	case ROUND_TF32:
		return round_tf32(x);
	case ROUND_FP16:
#ifdef __FLT16_MANT_DIG__
		return (float)(_Float16)x;
#else
		return round_tf32(x); // same mantissa; the compiler lacks _Float16's range
#endif
	}
	return x;
}

// gemm_rounding is what the math mode does to SGEMM's inputs:
// CUBLAS_TF32_TENSOR_OP_MATH rounds them to TF32 (unless
// NVIDIA_TF32_OVERRIDE=0), the deprecated CUBLAS_TENSOR_OP_MATH to FP16
// (CUBLAS_COMPUTE_32F_FAST_16F); the others compute in FP32.
static int gemm_rounding(cublasMath_t math) {
	switch ((int)math & 0xf) {
	case CUBLAS_TF32_TENSOR_OP_MATH:
		return emu_cfg.tf32_override_off ? ROUND_FP32 : ROUND_TF32;
	case CUBLAS_TENSOR_OP_MATH:
		return ROUND_FP16;
	}
	return ROUND_FP32;
}

static CUresult run_sgemm(emu_op *op) {
	int ta = op->i[0], tb = op->i[1], m = op->i[2], n = op->i[3], k = op->i[4];
	int lda = op->i[5], ldb = op->i[6], ldc = op->i[7], mode = op->i[8];
	double alpha = op->d[0], beta = op->d[1];
	int an = ta == CUBLAS_OP_N, bn = tb == CUBLAS_OP_N;
	const float *a = NULL, *b = NULL;
	int reads = k > 0 && alpha != 0;
	if (reads) {
		a = emu_operand(op->ctx, op, "A", op->p[0], emu_mat_extent(an ? m : k, an ? k : m, lda), 4);
		b = a == NULL ? NULL : emu_operand(op->ctx, op, "B", op->p[1], emu_mat_extent(bn ? k : n, bn ? n : k, ldb), 4);
		if (b == NULL) {
			return CUDA_ERROR_ILLEGAL_ADDRESS;
		}
	}
	float *c = emu_operand(op->ctx, op, "C", op->p[2], emu_mat_extent(m, n, ldc), 4);
	if (c == NULL) {
		return CUDA_ERROR_ILLEGAL_ADDRESS;
	}
	if (!reads) {
		for (int j = 0; j < n; j++) {
			for (int i = 0; i < m; i++) {
				float *cij = c + i + (size_t)j * ldc;
				*cij = beta == 0 ? 0 : (float)(beta * *cij);
			}
		}
		return CUDA_SUCCESS;
	}
	// op(A)'s rows and op(B)'s columns, rounded, packed contiguous: then
	// every C(i,j) is one dot product, accumulated in double and rounded
	// to float once.
	double *ap = malloc(((size_t)m + (size_t)n) * (size_t)k * sizeof *ap);
	if (ap == NULL) {
		abort();
	}
	double *bp = ap + (size_t)m * k;
	for (int i = 0; i < m; i++) {
		for (int l = 0; l < k; l++) {
			float v = an ? a[i + (size_t)l * lda] : a[l + (size_t)i * lda];
			ap[(size_t)i * k + l] = round_input(v, mode);
		}
	}
	for (int j = 0; j < n; j++) {
		for (int l = 0; l < k; l++) {
			float v = bn ? b[l + (size_t)j * ldb] : b[j + (size_t)l * ldb];
			bp[(size_t)j * k + l] = round_input(v, mode);
		}
	}
	enum { BLOCK = 32 };
	for (int i0 = 0; i0 < m; i0 += BLOCK) {
		int i1 = i0 + BLOCK < m ? i0 + BLOCK : m;
		for (int j = 0; j < n; j++) {
			const double *bj = bp + (size_t)j * k;
			for (int i = i0; i < i1; i++) {
				const double *ai = ap + (size_t)i * k;
				double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
				int l = 0;
				for (; l + 4 <= k; l += 4) {
					s0 += ai[l] * bj[l];
					s1 += ai[l + 1] * bj[l + 1];
					s2 += ai[l + 2] * bj[l + 2];
					s3 += ai[l + 3] * bj[l + 3];
				}
				for (; l < k; l++) {
					s0 += ai[l] * bj[l];
				}
				float *cij = c + i + (size_t)j * ldc;
				double v = alpha * ((s0 + s1) + (s2 + s3));
				if (beta != 0) {
					v += beta * *cij; // beta 0: C is not read
				}
				*cij = (float)v;
			}
		}
	}
	free(ap);
	return CUDA_SUCCESS;
}

static int valid_op(cublasOperation_t t) { return t == CUBLAS_OP_N || t == CUBLAS_OP_T || t == CUBLAS_OP_C; }

cublasStatus_t CUBLASWINAPI cublasSgemm(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
                                        const float *alpha, const float *A, int lda, const float *B, int ldb, const float *beta, float *C,
                                        int ldc) {
	L;
	const char *fn = "cublasSgemm";
	struct CUstream_st *s;
	cublasStatus_t st = need_handle(fn, handle, &s);
	if (st != CUBLAS_STATUS_SUCCESS) {
		U(st);
	}
	if (!valid_op(transa) || !valid_op(transb)) {
		U(invalid(fn, "transa or transb is not CUBLAS_OP_N, _T or _C"));
	}
	if (m < 0 || n < 0 || k < 0) {
		U(invalid(fn, "m, n or k < 0"));
	}
	int arows = transa == CUBLAS_OP_N ? m : k, brows = transb == CUBLAS_OP_N ? k : n;
	if (lda < (arows > 1 ? arows : 1)) {
		U(invalid(fn, transa == CUBLAS_OP_N ? "lda < max(1, m)" : "lda < max(1, k)"));
	}
	if (ldb < (brows > 1 ? brows : 1)) {
		U(invalid(fn, transb == CUBLAS_OP_N ? "ldb < max(1, k)" : "ldb < max(1, n)"));
	}
	if (ldc < (m > 1 ? m : 1)) {
		U(invalid(fn, "ldc < max(1, m)"));
	}
	if (alpha == NULL || beta == NULL) {
		U(invalid(fn, "alpha or beta is NULL"));
	}
	if (m == 0 || n == 0 || ((*alpha == 0 || k == 0) && *beta == 1)) {
		U(CUBLAS_STATUS_SUCCESS);
	}
	emu_op op = {.i = {transa == CUBLAS_OP_N ? CUBLAS_OP_N : CUBLAS_OP_T, transb == CUBLAS_OP_N ? CUBLAS_OP_N : CUBLAS_OP_T, m, n, k, lda,
	                   ldb, ldc, gemm_rounding(handle->math)},
	             .d = {*alpha, *beta},
	             .p = {(CUdeviceptr)A, (CUdeviceptr)B, (CUdeviceptr)C}};
	queue(s, fn, run_sgemm, &op);
	U(CUBLAS_STATUS_SUCCESS);
}
