// The emulator's own tests: each strictness property docs/gpu.md claims
// for it, shown on a call that breaks it. Built and run by
// scripts/cuda-emulator.sh --check. Calls that abort the process (misuse)
// or fault run in a forked child.

#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cublas_v2.h>
#include <cusolverDn.h>

static int failures, checks;

#define CHECK(cond, ...)                                           \
	do {                                                       \
		checks++;                                          \
		if (!(cond)) {                                     \
			failures++;                                \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);              \
			fprintf(stderr, "\n");                     \
		}                                                  \
	} while (0)

#define EQ(got, want) CHECK((long long)(got) == (long long)(want), "%s = %lld, want %lld", #got, (long long)(got), (long long)(want))

static CUcontext ctx;
static CUstream stream;
static cublasHandle_t blas;
static cusolverDnHandle_t solver;

// fresh makes a new primary context current with a stream and handles
// (after a sticky error, the old one is released and so reset).
static void fresh(void) {
	if (ctx != NULL) {
		cuCtxPopCurrent(NULL);
		cuDevicePrimaryCtxRelease(0);
	}
	EQ(cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_SUCCESS);
	EQ(cuCtxPushCurrent(ctx), CUDA_SUCCESS);
	EQ(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
	EQ(cublasCreate(&blas), CUBLAS_STATUS_SUCCESS);
	EQ(cublasSetStream(blas, stream), CUBLAS_STATUS_SUCCESS);
	EQ(cusolverDnCreate(&solver), CUSOLVER_STATUS_SUCCESS);
	EQ(cusolverDnSetStream(solver, stream), CUSOLVER_STATUS_SUCCESS);
}

static CUdeviceptr alloc(size_t n) {
	CUdeviceptr p = 0;
	EQ(cuMemAlloc(&p, n), CUDA_SUCCESS);
	return p;
}

static void upload(CUdeviceptr d, const void *h, size_t n) {
	EQ(cuMemcpyHtoDAsync(d, h, n, stream), CUDA_SUCCESS);
	EQ(cuStreamSynchronize(stream), CUDA_SUCCESS);
}

static void download(void *h, CUdeviceptr d, size_t n) {
	EQ(cuMemcpyDtoHAsync(h, d, n, stream), CUDA_SUCCESS);
	EQ(cuStreamSynchronize(stream), CUDA_SUCCESS);
}

// child runs f in a forked process and returns how it ended: its exit
// status, or 128 + the signal that ended it.
static int child(void (*f)(void)) {
	fflush(stderr);
	pid_t pid = fork();
	if (pid == 0) {
		f();
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
}

static void test_one_library(void) {
	const char *names[] = {"libcuda.so.1", "libcublas.so.13", "libcusolver.so.12", "libcudart.so.13"};
	void *first = dlopen("libcudaemu.so", RTLD_NOW | RTLD_LOCAL);
	CHECK(first != NULL, "dlopen libcudaemu.so: %s", dlerror());
	for (int i = 0; i < 4; i++) {
		void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
		CHECK(h != NULL && h == first, "dlopen %s = %p, libcudaemu.so's %p: one library, one state", names[i], h, first);
	}
	CHECK(dlsym(first, "cuMemAlloc_v2") != NULL && dlsym(first, "cublasSgemm_v2") != NULL &&
	          dlsym(first, "cuEventElapsedTime_v2") != NULL && dlsym(first, "cusolverDnDpotrf") != NULL,
	      "the versioned symbols the headers map to");
}

static void test_before_init(void) {
	int n = -1, v = 0;
	EQ(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
	EQ(cuDriverGetVersion(&v), CUDA_SUCCESS);
	EQ(v, 13000);
	EQ(cuInit(0), CUDA_SUCCESS);
	EQ(cuDeviceGetCount(&n), CUDA_SUCCESS);
	EQ(n, 1);
	char name[64];
	EQ(cuDeviceGetName(name, sizeof name, 0), CUDA_SUCCESS);
	CHECK(strcmp(name, "CUDA emulator (react-triton)") == 0, "name %s", name);
	const char *s = NULL;
	EQ(cuGetErrorName(CUDA_ERROR_ILLEGAL_ADDRESS, &s), CUDA_SUCCESS);
	CHECK(s != NULL && strcmp(s, "CUDA_ERROR_ILLEGAL_ADDRESS") == 0, "name of 700: %s", s);
	CHECK(strcmp(cublasGetStatusName(CUBLAS_STATUS_INVALID_VALUE), "CUBLAS_STATUS_INVALID_VALUE") == 0, "cublasGetStatusName");
	CHECK(strcmp(cudaGetErrorName(cudaErrorIllegalAddress), "cudaErrorIllegalAddress") == 0, "cudaGetErrorName");
}

// Property 5: a context must be current on the calling thread.
static void test_no_context(void) {
	CUdeviceptr p;
	size_t f, t;
	cublasHandle_t h;
	EQ(cuMemAlloc(&p, 8), CUDA_ERROR_INVALID_CONTEXT);
	EQ(cuMemGetInfo(&f, &t), CUDA_ERROR_INVALID_CONTEXT);
	EQ(cublasCreate(&h), CUBLAS_STATUS_NOT_INITIALIZED);
}

static void *other_thread(void *arg) {
	CUdeviceptr p;
	float one = 1, zero = 0;
	CUdeviceptr *m = arg;
	long r = 0;
	r |= cuMemAlloc(&p, 8) != CUDA_ERROR_INVALID_CONTEXT;
	r |= cuStreamSynchronize(stream) != CUDA_ERROR_INVALID_CONTEXT;
	r |= cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, (float *)*m, 1, (float *)*m, 1, &zero, (float *)*m, 1) !=
	     CUBLAS_STATUS_NOT_INITIALIZED;
	r |= cusolverDnDpotrs(solver, CUBLAS_FILL_MODE_LOWER, 1, 1, (double *)*m, 1, (double *)*m, 1, (int *)*m) != CUSOLVER_STATUS_NOT_INITIALIZED;
	return (void *)r;
}

static void test_other_thread(void) {
	CUdeviceptr m = alloc(64);
	pthread_t th;
	void *r;
	pthread_create(&th, NULL, other_thread, &m);
	pthread_join(th, &r);
	CHECK(r == NULL, "calls on a thread without the context pushed must fail");
	EQ(cuMemFree(m), CUDA_SUCCESS);
}

static void pop_empty(void) {
	for (int i = 0; i < 64; i++) {
		cuCtxPopCurrent(NULL);
	}
}

static void double_free(void) {
	CUdeviceptr p = alloc(8);
	cuMemFree(p);
	cuMemFree(p);
}

static void test_misuse_aborts(void) {
	EQ(child(pop_empty), 128 + SIGABRT);
	EQ(child(double_free), 128 + SIGABRT);
}

// Properties 4, 7, 11: fake addresses, NaN-filled fresh memory, counts.
static CUdeviceptr deref_ptr;
static void deref(void) {
	volatile double *p = (volatile double *)(uintptr_t)deref_ptr;
	(void)*p;
}

static void test_memory(void) {
	size_t free0, free1, total;
	EQ(cuMemGetInfo(&free0, &total), CUDA_SUCCESS);
	CUdeviceptr p = alloc(1000);
	EQ(cuMemGetInfo(&free1, &total), CUDA_SUCCESS);
	EQ(free0 - free1, 1000);
	double h[125];
	download(h, p, sizeof h);
	CHECK(isnan(h[0]) && isnan(h[124]), "fresh memory reads as NaN");

	deref_ptr = p;
	EQ(child(deref), 128 + SIGSEGV);

	double host[4] = {1, 2, 3, 4};
	EQ(cuMemcpyHtoDAsync((CUdeviceptr)(uintptr_t)host, host, 8, stream), CUDA_ERROR_INVALID_VALUE);
	EQ(cuMemcpyHtoDAsync(p + 992, host, 16, stream), CUDA_ERROR_INVALID_VALUE);
	EQ(cuMemcpyDtoDAsync(p + 8, p, 16, stream), CUDA_ERROR_INVALID_VALUE); // overlapping

	unsigned int mt = 0;
	EQ(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)host), CUDA_ERROR_INVALID_VALUE);
	EQ(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p + 100), CUDA_SUCCESS);
	EQ(mt, CU_MEMORYTYPE_DEVICE);
	CUdeviceptr start = 0;
	size_t size = 0;
	int ord = -1;
	CUcontext c = NULL;
	EQ(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p + 100), CUDA_SUCCESS);
	EQ(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p + 100), CUDA_SUCCESS);
	EQ(cuPointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p + 100), CUDA_SUCCESS);
	EQ(cuPointerGetAttribute(&c, CU_POINTER_ATTRIBUTE_CONTEXT, p + 100), CUDA_SUCCESS);
	EQ(start, p);
	EQ(size, 1000);
	EQ(ord, 0);
	CHECK(c == ctx, "CONTEXT");
	EQ(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p + 1000), CUDA_ERROR_INVALID_VALUE);

	EQ(cuMemFree(p), CUDA_SUCCESS);
	EQ(cuMemGetInfo(&free1, &total), CUDA_SUCCESS);
	EQ(free1, free0);
	EQ(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p), CUDA_ERROR_INVALID_VALUE);
}

// Property 6: stream work is deferred to the synchronisation.
static void test_deferred(void) {
	CUdeviceptr p = alloc(16), q = alloc(16);
	double in[2] = {1, 2}, out[2] = {0, 0};
	EQ(cuMemcpyHtoDAsync(p, in, 16, stream), CUDA_SUCCESS);
	in[0] = 5; // before the synchronisation: the copy reads this
	EQ(cuMemcpyDtoHAsync(out, p, 16, stream), CUDA_SUCCESS);
	CHECK(out[0] == 0, "a queued download wrote the host memory before the synchronisation");
	EQ(cuStreamSynchronize(stream), CUDA_SUCCESS);
	CHECK(out[0] == 5 && out[1] == 2, "the upload read the host memory when it ran: %g %g", out[0], out[1]);

	// cuMemFree runs the queued work first.
	out[0] = out[1] = 0;
	EQ(cuMemcpyDtoHAsync(out, p, 16, stream), CUDA_SUCCESS);
	EQ(cuMemFree(p), CUDA_SUCCESS);
	CHECK(out[0] == 5, "cuMemFree ran the queued download first");

	// Another stream waits for an event only when told to.
	CUstream other;
	CUevent e;
	EQ(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
	EQ(cuEventCreate(&e, CU_EVENT_DEFAULT), CUDA_SUCCESS);
	EQ(cuMemsetD8Async(q, 0, 16, stream), CUDA_SUCCESS);
	EQ(cuEventRecord(e, stream), CUDA_SUCCESS);
	EQ(cuMemcpyDtoHAsync(out, q, 16, other), CUDA_SUCCESS);
	EQ(cuStreamSynchronize(other), CUDA_SUCCESS);
	CHECK(isnan(out[0]), "without a wait, the other stream ran before the memset");
	EQ(cuStreamWaitEvent(other, e, 0), CUDA_SUCCESS);
	EQ(cuMemcpyDtoHAsync(out, q, 16, other), CUDA_SUCCESS);
	EQ(cuStreamSynchronize(other), CUDA_SUCCESS);
	CHECK(out[0] == 0, "after cuStreamWaitEvent the memset ran first: %g", out[0]);

	// Property 10: events time only completed work.
	CUevent a, b;
	float ms = -1;
	EQ(cuEventCreate(&a, CU_EVENT_DEFAULT), CUDA_SUCCESS);
	EQ(cuEventCreate(&b, CU_EVENT_DEFAULT), CUDA_SUCCESS);
	EQ(cuEventElapsedTime(&ms, a, b), CUDA_ERROR_INVALID_HANDLE);
	EQ(cuEventRecord(a, stream), CUDA_SUCCESS);
	EQ(cuMemsetD8Async(q, 1, 16, stream), CUDA_SUCCESS);
	EQ(cuEventRecord(b, stream), CUDA_SUCCESS);
	EQ(cuEventElapsedTime(&ms, a, b), CUDA_ERROR_NOT_READY);
	EQ(cuEventSynchronize(b), CUDA_SUCCESS);
	EQ(cuEventElapsedTime(&ms, a, b), CUDA_SUCCESS);
	CHECK(ms > 0 && ms < 1000, "elapsed %g ms", ms);
	cuEventDestroy(a);
	cuEventDestroy(b);
	cuEventDestroy(e);
	EQ(cuStreamDestroy(other), CUDA_SUCCESS);
	EQ(cuMemFree(q), CUDA_SUCCESS);
}

// Properties 1, 2: column-major, op(A), the uplo triangle only.
static void test_blas(void) {
	// A is 2×3, column-major: [1 2 3; 4 5 6]; B 3×2: [1 0; 0 1; 1 1].
	float a[6] = {1, 4, 2, 5, 3, 6}, b[6] = {1, 0, 1, 0, 1, 1}, c[4];
	CUdeviceptr da = alloc(sizeof a), db = alloc(sizeof b), dc = alloc(sizeof c);
	upload(da, a, sizeof a);
	upload(db, b, sizeof b);
	float one = 1, zero = 0;
	// C = A B (2×2) = [4 5; 10 11]; C starts NaN and beta = 0 ignores it.
	EQ(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 3, &one, (float *)da, 2, (float *)db, 3, &zero, (float *)dc, 2), CUBLAS_STATUS_SUCCESS);
	download(c, dc, sizeof c);
	CHECK(c[0] == 4 && c[1] == 10 && c[2] == 5 && c[3] == 11, "A B = %g %g %g %g", c[0], c[1], c[2], c[3]);
	// Aᵀ read as 3×2 with OP_T: C = (Aᵀ)ᵀ... here C = Bᵀ Aᵀ = (A B)ᵀ.
	EQ(cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_T, 2, 2, 3, &one, (float *)db, 3, (float *)da, 2, &zero, (float *)dc, 2), CUBLAS_STATUS_SUCCESS);
	download(c, dc, sizeof c);
	CHECK(c[0] == 4 && c[1] == 5 && c[2] == 10 && c[3] == 11, "Bᵀ Aᵀ = %g %g %g %g", c[0], c[1], c[2], c[3]);
	// Property 3: leading dimensions as cuBLAS validates them.
	EQ(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 3, &one, (float *)da, 1, (float *)db, 3, &zero, (float *)dc, 2), CUBLAS_STATUS_INVALID_VALUE);
	EQ(cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, 2, 2, 3, &one, (float *)da, 2, (float *)db, 3, &zero, (float *)dc, 2), CUBLAS_STATUS_INVALID_VALUE);
	EQ(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 3, &one, (float *)da, 2, (float *)db, 3, &zero, (float *)dc, 1), CUBLAS_STATUS_INVALID_VALUE);

	// DSYMV with the other triangle NaN: only the uplo one is read.
	double s[9], x[3] = {1, 2, 3}, y[3];
	double nan = NAN;
	// Lower triangle (column-major) of [2 1 0; 1 3 1; 0 1 4], upper NaN.
	double lower[9] = {2, 1, 0, nan, 3, 1, nan, nan, 4}, upper[9] = {2, nan, nan, 1, 3, nan, 0, 1, 4};
	CUdeviceptr ds = alloc(sizeof s), dx = alloc(sizeof x), dy = alloc(sizeof y);
	upload(dx, x, sizeof x);
	double d1 = 1, d0 = 0;
	upload(ds, lower, sizeof lower);
	EQ(cublasDsymv(blas, CUBLAS_FILL_MODE_LOWER, 3, &d1, (double *)ds, 3, (double *)dx, 1, &d0, (double *)dy, 1), CUBLAS_STATUS_SUCCESS);
	download(y, dy, sizeof y);
	CHECK(y[0] == 4 && y[1] == 10 && y[2] == 14, "symv lower = %g %g %g", y[0], y[1], y[2]);
	EQ(cublasDsymv(blas, CUBLAS_FILL_MODE_UPPER, 3, &d1, (double *)ds, 3, (double *)dx, 1, &d0, (double *)dy, 1), CUBLAS_STATUS_SUCCESS);
	download(y, dy, sizeof y);
	CHECK(isnan(y[0]), "symv upper on a lower-only matrix must read the NaN triangle: %g", y[0]);
	upload(ds, upper, sizeof upper);
	EQ(cublasDsymv(blas, CUBLAS_FILL_MODE_UPPER, 3, &d1, (double *)ds, 3, (double *)dx, 1, &d0, (double *)dy, 1), CUBLAS_STATUS_SUCCESS);
	download(y, dy, sizeof y);
	CHECK(y[0] == 4 && y[1] == 10 && y[2] == 14, "symv upper = %g %g %g", y[0], y[1], y[2]);
	EQ(cublasDsymv(blas, CUBLAS_FILL_MODE_UPPER, 3, &d1, (double *)ds, 2, (double *)dx, 1, &d0, (double *)dy, 1), CUBLAS_STATUS_INVALID_VALUE);

	// DAXPY with a stride: the diagonal of s += 1.
	double ones[3] = {1, 1, 1};
	upload(dx, ones, sizeof ones);
	EQ(cublasDaxpy(blas, 3, &d1, (double *)dx, 1, (double *)ds, 4), CUBLAS_STATUS_SUCCESS);
	download(s, ds, sizeof s);
	CHECK(s[0] == 3 && s[4] == 4 && s[8] == 5 && s[3] == 1, "daxpy on the diagonal");

	// DPOTRF/DPOTRS on the lower triangle, the upper NaN and untouched.
	upload(ds, lower, sizeof lower);
	int lwork = 0, info = 99;
	EQ(cusolverDnDpotrf_bufferSize(solver, CUBLAS_FILL_MODE_LOWER, 3, (double *)ds, 3, &lwork), CUSOLVER_STATUS_SUCCESS);
	CUdeviceptr work = alloc(8 * (size_t)lwork), dinfo = alloc(4);
	EQ(cusolverDnDpotrf(solver, CUBLAS_FILL_MODE_LOWER, 3, (double *)ds, 3, (double *)work, lwork, (int *)dinfo), CUSOLVER_STATUS_SUCCESS);
	download(&info, dinfo, 4);
	EQ(info, 0);
	download(s, ds, sizeof s);
	CHECK(isnan(s[3]) && isnan(s[6]) && isnan(s[7]), "dpotrf wrote the upper triangle");
	CHECK(fabs(s[0] - sqrt(2)) < 1e-15 && fabs(s[1] - 1 / sqrt(2)) < 1e-15 && s[2] == 0, "L's first column");
	double rhs[6] = {4, 10, 14, 2, 3, 4}; // A [1 2 3]ᵀ, A [1 0 1]ᵀ-ish: check A X = rhs
	CUdeviceptr drhs = alloc(sizeof rhs);
	upload(drhs, rhs, sizeof rhs);
	EQ(cusolverDnDpotrs(solver, CUBLAS_FILL_MODE_LOWER, 3, 2, (double *)ds, 3, (double *)drhs, 3, (int *)dinfo), CUSOLVER_STATUS_SUCCESS);
	double sol[6];
	download(sol, drhs, sizeof sol);
	CHECK(fabs(sol[0] - 1) < 1e-14 && fabs(sol[1] - 2) < 1e-14 && fabs(sol[2] - 3) < 1e-14, "dpotrs = %g %g %g", sol[0], sol[1], sol[2]);
	double a2[9] = {2, 1, 0, 1, 3, 1, 0, 1, 4}, r2[3];
	for (int i = 0; i < 3; i++) {
		r2[i] = a2[i] * sol[3] + a2[i + 3] * sol[4] + a2[i + 6] * sol[5];
	}
	CHECK(fabs(r2[0] - 2) < 1e-14 && fabs(r2[1] - 3) < 1e-14 && fabs(r2[2] - 4) < 1e-14, "second right-hand side");
	// Reading the upper triangle of that factor is reading NaN.
	upload(drhs, rhs, sizeof rhs);
	EQ(cusolverDnDpotrs(solver, CUBLAS_FILL_MODE_UPPER, 3, 2, (double *)ds, 3, (double *)drhs, 3, (int *)dinfo), CUSOLVER_STATUS_SUCCESS);
	download(sol, drhs, sizeof sol);
	CHECK(isnan(sol[0]), "dpotrs upper read the lower triangle");

	// Property 9: devInfo and the workspace.
	double notpd[9] = {1, 2, 0, 2, 1, 0, 0, 0, 1};
	upload(ds, notpd, sizeof notpd);
	EQ(cusolverDnDpotrf(solver, CUBLAS_FILL_MODE_LOWER, 3, (double *)ds, 3, (double *)work, lwork, (int *)dinfo), CUSOLVER_STATUS_SUCCESS);
	download(&info, dinfo, 4);
	EQ(info, 2);
	EQ(cusolverDnDpotrf(solver, CUBLAS_FILL_MODE_LOWER, 3, (double *)ds, 2, (double *)work, lwork, (int *)dinfo), CUSOLVER_STATUS_INVALID_VALUE);
	download(&info, dinfo, 4);
	EQ(info, -4);
	EQ(cusolverDnDpotrf(solver, CUBLAS_FILL_MODE_LOWER, 3, (double *)ds, 3, (double *)work, lwork - 1, (int *)dinfo), CUSOLVER_STATUS_INVALID_VALUE);
	download(&info, dinfo, 4);
	EQ(info, -6);
	EQ(cusolverDnDpotrs(solver, CUBLAS_FILL_MODE_LOWER, 3, 2, (double *)ds, 3, (double *)drhs, 2, (int *)dinfo), CUSOLVER_STATUS_INVALID_VALUE);
	download(&info, dinfo, 4);
	EQ(info, -7);

	// Property 8: TF32 shows as error, the default mode does not.
	float va = 1.0f + 1.0f / 1024 + 1.0f / 4096, vb = 1;
	upload(da, &va, 4);
	upload(db, &vb, 4);
	EQ(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, (float *)da, 1, (float *)db, 1, &zero, (float *)dc, 1), CUBLAS_STATUS_SUCCESS);
	download(c, dc, 4);
	CHECK(c[0] == va, "default math: %.9g, want %.9g", c[0], va);
	EQ(cublasSetMathMode(blas, CUBLAS_TF32_TENSOR_OP_MATH), CUBLAS_STATUS_SUCCESS);
	EQ(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, (float *)da, 1, (float *)db, 1, &zero, (float *)dc, 1), CUBLAS_STATUS_SUCCESS);
	download(c, dc, 4);
	CHECK(c[0] == 1.0f + 1.0f / 1024, "TF32 math: %.9g, want %.9g", c[0], 1.0f + 1.0f / 1024);
	cublasMath_t mode;
	EQ(cublasGetMathMode(blas, &mode), CUBLAS_STATUS_SUCCESS);
	EQ(mode, CUBLAS_TF32_TENSOR_OP_MATH);
	EQ(cublasSetMathMode(blas, CUBLAS_DEFAULT_MATH), CUBLAS_STATUS_SUCCESS);

	CUdeviceptr all[] = {da, db, dc, ds, dx, dy, work, dinfo, drhs};
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
		EQ(cuMemFree(all[i]), CUDA_SUCCESS);
	}
}

// Property 3: an operand past its allocation is an illegal address at the
// synchronisation, sticky from then on.
static void test_illegal_address(void) {
	CUdeviceptr a = alloc(4 * 4 * 4), b = alloc(4 * 4 * 4), c = alloc(4 * 4 * 4 - 4);
	float one = 1, zero = 0;
	EQ(cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, 4, 4, 4, &one, (float *)a, 4, (float *)b, 4, &zero, (float *)c, 4), CUBLAS_STATUS_SUCCESS);
	EQ(cuStreamSynchronize(stream), CUDA_ERROR_ILLEGAL_ADDRESS);
	CUdeviceptr p;
	EQ(cuMemAlloc(&p, 8), CUDA_ERROR_ILLEGAL_ADDRESS);
	EQ(cuStreamSynchronize(stream), CUDA_ERROR_ILLEGAL_ADDRESS);
	EQ(cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, 4, 4, 4, &one, (float *)a, 4, (float *)b, 4, &zero, (float *)a, 4), CUBLAS_STATUS_EXECUTION_FAILED);
	fresh();

	// A freed operand, a host pointer as an operand.
	a = alloc(64);
	b = alloc(64);
	EQ(cuMemFree(b), CUDA_SUCCESS);
	double d1 = 1;
	EQ(cublasDaxpy(blas, 8, &d1, (double *)a, 1, (double *)b, 1), CUBLAS_STATUS_SUCCESS);
	EQ(cuStreamSynchronize(stream), CUDA_ERROR_ILLEGAL_ADDRESS);
	fresh();
	double host[8] = {0};
	a = alloc(64);
	EQ(cublasDaxpy(blas, 8, &d1, host, 1, (double *)a, 1), CUBLAS_STATUS_SUCCESS);
	EQ(cuStreamSynchronize(stream), CUDA_ERROR_ILLEGAL_ADDRESS);
	fresh();
	// A DPOTRF workspace too small for the lwork passed.
	a = alloc(8 * 16);
	int lwork;
	EQ(cusolverDnDpotrf_bufferSize(solver, CUBLAS_FILL_MODE_LOWER, 4, (double *)a, 4, &lwork), CUSOLVER_STATUS_SUCCESS);
	CUdeviceptr w = alloc(8 * (size_t)lwork - 8), info = alloc(4);
	EQ(cusolverDnDpotrf(solver, CUBLAS_FILL_MODE_LOWER, 4, (double *)a, 4, (double *)w, lwork, (int *)info), CUSOLVER_STATUS_SUCCESS);
	EQ(cuStreamSynchronize(stream), CUDA_ERROR_ILLEGAL_ADDRESS);
	fresh();
}

// Kernels: PTX interpreted thread by thread, each global access checked.
static const char *ptx =
	".version 7.0\n"
	".target sm_70\n"
	".address_size 64\n"
	"// y[i] += a*x[i], one thread per value\n"
	".visible .entry scale_add(.param .u64 y, .param .u64 x, .param .f32 a, .param .u32 n)\n"
	"{\n"
	"	.reg .pred %p<2>;\n"
	"	.reg .b32 %r<8>;\n"
	"	.reg .b64 %rd<8>;\n"
	"	.reg .f32 %f<4>;\n"
	"	ld.param.u64 %rd1, [y];\n"
	"	ld.param.u64 %rd2, [x];\n"
	"	ld.param.f32 %f1, [a];\n"
	"	ld.param.u32 %r1, [n];\n"
	"	mov.u32 %r2, %ctaid.x;\n"
	"	mov.u32 %r3, %ntid.x;\n"
	"	mov.u32 %r4, %tid.x;\n"
	"	mad.lo.s32 %r5, %r2, %r3, %r4;\n"
	"	setp.ge.s32 %p1, %r5, %r1;\n"
	"	@%p1 bra END;\n"
	"	mul.wide.s32 %rd3, %r5, 4;\n"
	"	add.s64 %rd4, %rd1, %rd3;\n"
	"	add.s64 %rd5, %rd2, %rd3;\n"
	"	ld.global.f32 %f2, [%rd5];\n"
	"	ld.global.f32 %f3, [%rd4];\n"
	"	fma.rn.f32 %f3, %f1, %f2, %f3;\n"
	"	st.global.f32 [%rd4], %f3;\n"
	"END:\n"
	"	ret;\n"
	"}\n"
	".visible .entry misaligned(.param .u64 p)\n"
	"{\n"
	"	.reg .b64 %rd<3>;\n"
	"	.reg .f32 %f<2>;\n"
	"	ld.param.u64 %rd1, [p];\n"
	"	add.u64 %rd2, %rd1, 2;\n"
	"	ld.global.f32 %f1, [%rd2];\n"
	"	ret;\n"
	"}\n"
	".visible .entry uninit(.param .u64 p)\n"
	"{\n"
	"	.reg .b64 %rd<2>;\n"
	"	.reg .f32 %f<2>;\n"
	"	ld.param.u64 %rd1, [p];\n"
	"	st.global.f32 [%rd1], %f1;\n"
	"	ret;\n"
	"}\n";

static void test_kernels(void) {
	CUmodule mod, bad;
	CUfunction f, mis, un, none;
	EQ(cuModuleLoadData(&mod, ptx), CUDA_SUCCESS);
	EQ(cuModuleGetFunction(&f, mod, "scale_add"), CUDA_SUCCESS);
	EQ(cuModuleGetFunction(&mis, mod, "misaligned"), CUDA_SUCCESS);
	EQ(cuModuleGetFunction(&un, mod, "uninit"), CUDA_SUCCESS);
	EQ(cuModuleGetFunction(&none, mod, "nosuch"), CUDA_ERROR_NOT_FOUND);
	EQ(cuModuleLoadData(&bad, ".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry k()\n{\n\tbar.sync 0;\n\tret;\n}\n"), CUDA_ERROR_NOT_SUPPORTED);
	EQ(cuModuleLoadData(&bad, ".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry k()\n{\n\tbra NOWHERE;\n}\n"), CUDA_ERROR_INVALID_PTX);

	enum { N = 1000 };
	float x[N], y[N];
	for (int i = 0; i < N; i++) {
		x[i] = (float)i;
		y[i] = 1;
	}
	CUdeviceptr dx = alloc(sizeof x), dy = alloc(sizeof y);
	upload(dx, x, sizeof x);
	upload(dy, y, sizeof y);
	float a = 2;
	unsigned n = N;
	void *args[] = {&dy, &dx, &a, &n};
	EQ(cuLaunchKernel(f, (N + 255) / 256, 1, 1, 256, 1, 1, 0, stream, args, NULL), CUDA_SUCCESS);
	a = 100; // the parameters were copied at the launch
	download(y, dy, sizeof y);
	CHECK(y[0] == 1 && y[999] == 1999, "scale_add: %g %g", y[0], y[999]);
	EQ(cuLaunchKernel(f, 1, 1, 1, 2048, 1, 1, 0, stream, args, NULL), CUDA_ERROR_INVALID_VALUE);
	EQ(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, stream, NULL, NULL), CUDA_ERROR_INVALID_VALUE);

	// A register read before any write is all ones: NaN.
	void *uargs[] = {&dy};
	EQ(cuLaunchKernel(un, 1, 1, 1, 1, 1, 1, 0, stream, uargs, NULL), CUDA_SUCCESS);
	download(y, dy, 4);
	CHECK(isnan(y[0]), "an unwritten register stored: %g", y[0]);

	// One value too many: thread 1000 reads past x.
	n = N + 1;
	EQ(cuLaunchKernel(f, (N + 256) / 256, 1, 1, 256, 1, 1, 0, stream, args, NULL), CUDA_SUCCESS);
	EQ(cuStreamSynchronize(stream), CUDA_ERROR_ILLEGAL_ADDRESS);
	EQ(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, stream, args, NULL), CUDA_ERROR_ILLEGAL_ADDRESS);
	fresh();
	EQ(cuModuleLoadData(&mod, ptx), CUDA_SUCCESS);
	EQ(cuModuleGetFunction(&mis, mod, "misaligned"), CUDA_SUCCESS);
	dx = alloc(64);
	void *margs[] = {&dx};
	EQ(cuLaunchKernel(mis, 1, 1, 1, 1, 1, 1, 0, stream, margs, NULL), CUDA_SUCCESS);
	EQ(cuStreamSynchronize(stream), CUDA_ERROR_MISALIGNED_ADDRESS);
	fresh();
	EQ(cuModuleLoadData(&mod, ptx), CUDA_SUCCESS);
	EQ(cuModuleGetFunction(&f, mod, "scale_add"), CUDA_SUCCESS);
	EQ(cuModuleUnload(mod), CUDA_SUCCESS);
	EQ(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, stream, args, NULL), CUDA_ERROR_INVALID_HANDLE);
}

// The runtime: device 0's primary context, with no context current.
static void *runtime_thread(void *arg) {
	void *p = NULL;
	long r = 0;
	r |= cudaMalloc(&p, 256) != cudaSuccess;
	double in[4] = {1, 2, 3, 4}, out[4] = {0};
	r |= cudaMemcpy(p, in, sizeof in, cudaMemcpyHostToDevice) != cudaSuccess;
	r |= cudaMemcpy(out, p, sizeof out, cudaMemcpyDeviceToHost) != cudaSuccess;
	r |= out[3] != 4;
	r |= cudaMemcpy(out, in, sizeof out, cudaMemcpyHostToDevice) != cudaErrorInvalidValue;
	CUcontext c = NULL;
	r |= cuPointerGetAttribute(&c, CU_POINTER_ATTRIBUTE_CONTEXT, (CUdeviceptr)(uintptr_t)p) != CUDA_SUCCESS;
	r |= c != ctx;
	r |= cudaDeviceSynchronize() != cudaSuccess;
	*(void **)arg = p;
	return (void *)r;
}

static void test_runtime(void) {
	pthread_t th;
	void *p, *r;
	pthread_create(&th, NULL, runtime_thread, &p);
	pthread_join(th, &r);
	CHECK(r == NULL, "runtime calls on a thread with no context");
	// Its memory is the primary context's: the driver sees and frees it.
	EQ(cuMemFree((CUdeviceptr)(uintptr_t)p), CUDA_SUCCESS);
	EQ(cudaFree(p), cudaErrorInvalidValue);
}

int main(void) {
	test_one_library();
	test_before_init();
	test_no_context();
	fresh();
	test_misuse_aborts();
	test_other_thread();
	test_memory();
	test_deferred();
	test_blas();
	test_illegal_address();
	test_kernels();
	test_runtime();
	if (failures > 0) {
		fprintf(stderr, "selftest: %d of %d checks FAILED\n", failures, checks);
		return 1;
	}
	fprintf(stderr, "selftest: all %d checks passed\n", checks);
	return 0;
}
