// A conformance probe: the calls whose answers the emulator imitates,
// each printed as "case: result", run once against NVIDIA's libraries on a
// GPU and once against the emulator, and the two outputs compared
// (docs/gpu.md, "The emulator"). It opens the libraries as the binding
// does (dlopen by soname, the versioned symbols), so the same binary runs
// on either. No case asserts anything: the comparison is the point.
//
//   probe            the main cases
//   probe sticky     a kernel (cuBLAS) writing to an unmapped address, and
//                    what every later call answers
//   probe misaligned a PTX kernel loading from a misaligned address
//   probe init       cuInit alone (run it with CUDA_VISIBLE_DEVICES="")

#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cublas_v2.h>
#include <cusolverDn.h>

#define FUNCS(X)                                                                                        \
	X(cu, cuInit) X(cu, cuDriverGetVersion) X(cu, cuDeviceGetCount) X(cu, cuDeviceGet)             \
	X(cu, cuDevicePrimaryCtxRetain) X(cu, cuDevicePrimaryCtxRelease) X(cu, cuCtxPushCurrent)       \
	X(cu, cuCtxPopCurrent) X(cu, cuCtxGetCurrent) X(cu, cuMemAlloc) X(cu, cuMemFree)                 \
	X(cu, cuMemGetInfo) X(cu, cuPointerGetAttribute) X(cu, cuMemcpyHtoDAsync)                      \
	X(cu, cuMemcpyDtoHAsync) X(cu, cuMemcpyDtoDAsync) X(cu, cuMemsetD8Async) X(cu, cuStreamCreate) \
	X(cu, cuStreamSynchronize) X(cu, cuStreamWaitEvent) X(cu, cuEventCreate) X(cu, cuEventRecord)  \
	X(cu, cuEventSynchronize) X(cu, cuEventElapsedTime) X(cu, cuEventDestroy)                      \
	X(cu, cuModuleLoadData) X(cu, cuModuleGetFunction) X(cu, cuLaunchKernel)                       \
	X(blas, cublasCreate) X(blas, cublasSetStream) X(blas, cublasGetMathMode)                      \
	X(blas, cublasSetMathMode) X(blas, cublasSgemm) X(blas, cublasDsymv) X(blas, cublasDaxpy)      \
	X(sol, cusolverDnCreate) X(sol, cusolverDnSetStream) X(sol, cusolverDnDpotrf_bufferSize)       \
	X(sol, cusolverDnDpotrf) X(sol, cusolverDnDpotrs) X(rt, cudaMalloc) X(rt, cudaFree)

#define str_(x) #x
#define str(x) str_(x)
#define FIELD(lib, name) static __typeof__(&name) p_##name;
FUNCS(FIELD)

static void open_all(void) {
	void *cu = dlopen("libcuda.so.1", RTLD_NOW), *blas = dlopen("libcublas.so.13", RTLD_NOW),
	     *sol = dlopen("libcusolver.so.12", RTLD_NOW), *rt = dlopen("libcudart.so.13", RTLD_NOW);
	if (!cu || !blas || !sol || !rt) {
		printf("open: %s\n", dlerror());
		exit(1);
	}
#define RESOLVE(lib, name)                                          \
	p_##name = (__typeof__(&name))dlsym(lib, str(name));       \
	if (p_##name == NULL) {                                    \
		printf("open: no %s\n", str(name));                \
		exit(1);                                           \
	}
	FUNCS(RESOLVE)
}

#define P(name, r) printf("%s: %d\n", name, (int)(r))

static CUcontext ctx;
static CUstream stream;
static CUevent ev;
static cublasHandle_t blas;
static cusolverDnHandle_t sol;
static CUdeviceptr dev;

static void setup(void) {
	CUdevice d;
	P("init", p_cuInit(0));
	p_cuDeviceGet(&d, 0);
	P("retain", p_cuDevicePrimaryCtxRetain(&ctx, d));
	P("push", p_cuCtxPushCurrent(ctx));
	P("stream create", p_cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
	P("event create", p_cuEventCreate(&ev, CU_EVENT_DEFAULT));
	P("cublasCreate", p_cublasCreate(&blas));
	P("cublasSetStream", p_cublasSetStream(blas, stream));
	P("cusolverDnCreate", p_cusolverDnCreate(&sol));
	P("cusolverDnSetStream", p_cusolverDnSetStream(sol, stream));
	P("alloc 1 MiB", p_cuMemAlloc(&dev, 1 << 20));
}

// Calls on a thread where no context was pushed.
static void *bare_thread(void *arg) {
	(void)arg;
	CUdeviceptr p;
	size_t f, t;
	unsigned mt = 0;
	float ms, one = 1, zero = 0;
	CUcontext c = (CUcontext)1;
	P("bare thread: cuCtxGetCurrent", p_cuCtxGetCurrent(&c));
	printf("bare thread: current context is NULL: %d\n", c == NULL);
	P("bare thread: cuMemAlloc", p_cuMemAlloc(&p, 64));
	P("bare thread: cuMemGetInfo", p_cuMemGetInfo(&f, &t));
	P("bare thread: cuPointerGetAttribute", p_cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dev));
	P("bare thread: cuMemsetD8Async", p_cuMemsetD8Async(dev, 0, 64, stream));
	P("bare thread: cuEventRecord", p_cuEventRecord(ev, stream));
	P("bare thread: cuStreamSynchronize", p_cuStreamSynchronize(stream));
	P("bare thread: cuEventSynchronize", p_cuEventSynchronize(ev));
	P("bare thread: cuEventElapsedTime", p_cuEventElapsedTime(&ms, ev, ev));
	P("bare thread: cublasSgemm", p_cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, (float *)dev, 4, (float *)dev, 4, &zero,
	                                            (float *)(dev + 4096), 4));
	P("bare thread: cusolverDnDpotrs", p_cusolverDnDpotrs(sol, CUBLAS_FILL_MODE_LOWER, 0, 1, (double *)dev, 1, (double *)dev, 1, (int *)(dev + 8192)));
	P("bare thread: cuStreamSynchronize after", p_cuStreamSynchronize(stream));
	c = (CUcontext)1;
	p_cuCtxGetCurrent(&c);
	printf("bare thread: current context is NULL after the library calls: %d\n", c == NULL);
	return NULL;
}

static void *runtime_thread(void *arg) {
	(void)arg;
	void *p = (void *)1;
	CUcontext c = (CUcontext)1;
	P("runtime thread: cudaMalloc 0", p_cudaMalloc(&p, 0));
	printf("runtime thread: cudaMalloc 0 gives NULL: %d\n", p == NULL);
	P("runtime thread: cudaMalloc 256", p_cudaMalloc(&p, 256));
	p_cuCtxGetCurrent(&c);
	printf("runtime thread: the runtime made a context current: %d (the primary: %d)\n", c != NULL, c == ctx);
	CUcontext pc = NULL;
	P("runtime thread: pointer CONTEXT", p_cuPointerGetAttribute(&pc, CU_POINTER_ATTRIBUTE_CONTEXT, (CUdeviceptr)(uintptr_t)p));
	printf("runtime thread: its memory is the primary context's: %d\n", pc == ctx);
	P("runtime thread: cudaFree", p_cudaFree(p));
	P("runtime thread: cudaFree NULL", p_cudaFree(NULL));
	P("runtime thread: cudaFree again", p_cudaFree(p));
	return NULL;
}

static void main_cases(void) {
	int n = -1, v = 0;
	P("device count before cuInit", p_cuDeviceGetCount(&n));
	P("driver version before cuInit", p_cuDriverGetVersion(&v));
	P("init", p_cuInit(0));
	CUdeviceptr p;
	size_t f, t;
	P("cuMemAlloc, no context", p_cuMemAlloc(&p, 64));
	P("cuMemGetInfo, no context", p_cuMemGetInfo(&f, &t));
	P("cuCtxPopCurrent, empty", p_cuCtxPopCurrent(NULL));
	setup();

	// Memory.
	CUdeviceptr a;
	char host[64];
	unsigned mt = 0;
	P("cuMemAlloc 0 bytes", p_cuMemAlloc(&a, 0));
	P("cuMemAlloc 1000", p_cuMemAlloc(&a, 1000));
	P("pointer MEMORY_TYPE, inside", p_cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, a + 100));
	printf("pointer MEMORY_TYPE value: %u\n", mt);
	CUdeviceptr start = 0;
	size_t size = 0;
	P("pointer RANGE_START_ADDR, inside", p_cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, a + 100));
	P("pointer RANGE_SIZE, inside", p_cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, a + 100));
	printf("pointer range is the allocation: start %d, size %zu\n", start == a, size);
	P("pointer MEMORY_TYPE, host memory", p_cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)host));
	P("pointer MEMORY_TYPE, 1 past the end", p_cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, a + 1000));
	P("pointer MEMORY_TYPE, 1 MiB past the end", p_cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, a + (1 << 20) + 4096));
	P("HtoD past the end", p_cuMemcpyHtoDAsync(a + 992, host, 16, stream));
	P("HtoD to host memory", p_cuMemcpyHtoDAsync((CUdeviceptr)(uintptr_t)host, host, 16, stream));
	P("DtoH from host memory", p_cuMemcpyDtoHAsync(host, (CUdeviceptr)(uintptr_t)host, 16, stream));
	P("DtoD overlapping", p_cuMemcpyDtoDAsync(a + 8, a, 16, stream));
	P("memset past the end", p_cuMemsetD8Async(a + 999, 0, 2, stream));
	P("sync", p_cuStreamSynchronize(stream));
	P("cuMemFree inside", p_cuMemFree(a + 8));
	P("cuMemFree", p_cuMemFree(a));
	P("cuMemFree again", p_cuMemFree(a));
	P("cuMemFree 0", p_cuMemFree(0));
	P("pointer MEMORY_TYPE, freed", p_cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, a));

	// Events.
	CUevent e1, e2, nt;
	float ms = -1;
	p_cuEventCreate(&e1, CU_EVENT_DEFAULT);
	p_cuEventCreate(&e2, CU_EVENT_DEFAULT);
	p_cuEventCreate(&nt, CU_EVENT_DISABLE_TIMING);
	P("elapsed, never recorded", p_cuEventElapsedTime(&ms, e1, e2));
	P("wait on a never-recorded event", p_cuStreamWaitEvent(stream, e1, 0));
	P("event synchronize, never recorded", p_cuEventSynchronize(e1));
	p_cuEventRecord(e1, stream);
	p_cuEventRecord(e2, stream);
	p_cuEventRecord(nt, stream);
	P("event synchronize", p_cuEventSynchronize(e2));
	P("elapsed", p_cuEventElapsedTime(&ms, e1, e2));
	printf("elapsed is positive: %d\n", ms > 0);
	P("elapsed with a DISABLE_TIMING event", p_cuEventElapsedTime(&ms, e1, nt));

	// cuBLAS arguments.
	float one = 1, zero = 0;
	double d1 = 1, d0 = 0;
	cublasMath_t mode = (cublasMath_t)-1;
	P("cublasGetMathMode", p_cublasGetMathMode(blas, &mode));
	printf("cublasGetMathMode value: %d\n", (int)mode);
	P("sgemm lda < m", p_cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, (float *)dev, 3, (float *)dev, 4, &zero, (float *)(dev + 4096), 4));
	P("sgemm T lda < k", p_cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, 4, 4, 8, &one, (float *)dev, 4, (float *)dev, 8, &zero, (float *)(dev + 4096), 4));
	P("sgemm ldc < m", p_cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, (float *)dev, 4, (float *)dev, 4, &zero, (float *)(dev + 4096), 3));
	P("sgemm m < 0", p_cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, -1, 4, 4, &one, (float *)dev, 4, (float *)dev, 4, &zero, (float *)(dev + 4096), 4));
	P("sgemm bad op", p_cublasSgemm(blas, (cublasOperation_t)7, CUBLAS_OP_N, 4, 4, 4, &one, (float *)dev, 4, (float *)dev, 4, &zero, (float *)(dev + 4096), 4));
	P("dsymv lda < n", p_cublasDsymv(blas, CUBLAS_FILL_MODE_LOWER, 4, &d1, (double *)dev, 3, (double *)dev, 1, &d0, (double *)(dev + 4096), 1));
	P("dsymv incx 0", p_cublasDsymv(blas, CUBLAS_FILL_MODE_LOWER, 4, &d1, (double *)dev, 4, (double *)dev, 0, &d0, (double *)(dev + 4096), 1));
	P("dsymv bad uplo", p_cublasDsymv(blas, (cublasFillMode_t)5, 4, &d1, (double *)dev, 4, (double *)dev, 1, &d0, (double *)(dev + 4096), 1));
	P("daxpy incx 0", p_cublasDaxpy(blas, 4, &d1, (double *)dev, 0, (double *)(dev + 4096), 1));
	P("daxpy n 0", p_cublasDaxpy(blas, 0, &d1, (double *)dev, 1, (double *)(dev + 4096), 1));
	P("sync after cuBLAS", p_cuStreamSynchronize(stream));

	// cuSOLVER: devInfo starts at 99 each time.
	int lwork = -1, info;
	CUdeviceptr m = dev, w = dev + 65536, di = dev + 1040384;
	P("potrf_bufferSize n=1280", p_cusolverDnDpotrf_bufferSize(sol, CUBLAS_FILL_MODE_LOWER, 1280, (double *)m, 1280, &lwork));
	printf("potrf_bufferSize n=1280 lwork > 0: %d\n", lwork > 0);
	P("potrf_bufferSize n=4", p_cusolverDnDpotrf_bufferSize(sol, CUBLAS_FILL_MODE_LOWER, 4, (double *)m, 4, &lwork));
	P("potrf_bufferSize lda < n", p_cusolverDnDpotrf_bufferSize(sol, CUBLAS_FILL_MODE_LOWER, 4, (double *)m, 3, &lwork));
	int lw4 = 0;
	p_cusolverDnDpotrf_bufferSize(sol, CUBLAS_FILL_MODE_LOWER, 4, (double *)m, 4, &lw4);
	double spd[16] = {4, 1, 0, 0, 1, 4, 1, 0, 0, 1, 4, 1, 0, 0, 1, 4}, notpd[16] = {1, 2, 0, 0, 2, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
	int ninety_nine = 99;
#define INFO(label, call)                                                          \
	do {                                                                       \
		p_cuMemcpyHtoDAsync(di, &ninety_nine, 4, stream);                  \
		int st_ = (int)(call);                                             \
		info = -12345;                                                     \
		p_cuMemcpyDtoHAsync(&info, di, 4, stream);                         \
		int sy_ = (int)p_cuStreamSynchronize(stream);                      \
		printf("%s: %d, devInfo %d (sync %d)\n", label, st_, info, sy_);    \
	} while (0)
	p_cuMemcpyHtoDAsync(m, spd, sizeof spd, stream);
	INFO("potrf", p_cusolverDnDpotrf(sol, CUBLAS_FILL_MODE_LOWER, 4, (double *)m, 4, (double *)w, lw4, (int *)di));
	p_cuMemcpyHtoDAsync(m, spd, sizeof spd, stream);
	INFO("potrf lda < n", p_cusolverDnDpotrf(sol, CUBLAS_FILL_MODE_LOWER, 4, (double *)m, 3, (double *)w, lw4, (int *)di));
	INFO("potrf n < 0", p_cusolverDnDpotrf(sol, CUBLAS_FILL_MODE_LOWER, -1, (double *)m, 4, (double *)w, lw4, (int *)di));
	INFO("potrf bad uplo", p_cusolverDnDpotrf(sol, (cublasFillMode_t)5, 4, (double *)m, 4, (double *)w, lw4, (int *)di));
	INFO("potrf lwork one short", p_cusolverDnDpotrf(sol, CUBLAS_FILL_MODE_LOWER, 4, (double *)m, 4, (double *)w, lw4 - 1, (int *)di));
	INFO("potrf lwork 0", p_cusolverDnDpotrf(sol, CUBLAS_FILL_MODE_LOWER, 4, (double *)m, 4, (double *)w, 0, (int *)di));
	p_cuMemcpyHtoDAsync(m, notpd, sizeof notpd, stream);
	INFO("potrf not positive definite", p_cusolverDnDpotrf(sol, CUBLAS_FILL_MODE_LOWER, 4, (double *)m, 4, (double *)w, lw4, (int *)di));
	p_cuMemcpyHtoDAsync(m, spd, sizeof spd, stream);
	p_cusolverDnDpotrf(sol, CUBLAS_FILL_MODE_LOWER, 4, (double *)m, 4, (double *)w, lw4, (int *)di);
	INFO("potrs", p_cusolverDnDpotrs(sol, CUBLAS_FILL_MODE_LOWER, 4, 2, (double *)m, 4, (double *)(m + 4096), 4, (int *)di));
	INFO("potrs ldb < n", p_cusolverDnDpotrs(sol, CUBLAS_FILL_MODE_LOWER, 4, 2, (double *)m, 4, (double *)(m + 4096), 3, (int *)di));
	INFO("potrs nrhs < 0", p_cusolverDnDpotrs(sol, CUBLAS_FILL_MODE_LOWER, 4, -1, (double *)m, 4, (double *)(m + 4096), 4, (int *)di));

	pthread_t th;
	pthread_create(&th, NULL, bare_thread, NULL);
	pthread_join(th, NULL);
	pthread_create(&th, NULL, runtime_thread, NULL);
	pthread_join(th, NULL);

	CUcontext c;
	P("pop", p_cuCtxPopCurrent(&c));
	P("pop again", p_cuCtxPopCurrent(&c));
	CUdevice dv0 = 0;
	P("release", p_cuDevicePrimaryCtxRelease(dv0));
	P("release again", p_cuDevicePrimaryCtxRelease(dv0));
}

static void sticky(void) {
	setup();
	float one = 1, zero = 0;
	P("sgemm into an unmapped address", p_cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, 64, 64, 64, &one, (float *)dev, 64, (float *)dev, 64,
	                                                   &zero, (float *)(uintptr_t)0x1000, 64));
	P("sync after the fault", p_cuStreamSynchronize(stream));
	P("sync again", p_cuStreamSynchronize(stream));
	CUdeviceptr p;
	size_t f, t;
	unsigned mt;
	P("cuMemAlloc after the fault", p_cuMemAlloc(&p, 64));
	P("cuMemGetInfo after the fault", p_cuMemGetInfo(&f, &t));
	P("cuPointerGetAttribute after the fault", p_cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dev));
	P("cuMemsetD8Async after the fault", p_cuMemsetD8Async(dev, 0, 64, stream));
	P("cublasSgemm after the fault", p_cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, (float *)dev, 4, (float *)dev, 4, &zero,
	                                               (float *)(dev + 4096), 4));
	int lw = 0;
	P("cusolver bufferSize after the fault", p_cusolverDnDpotrf_bufferSize(sol, CUBLAS_FILL_MODE_LOWER, 4, (double *)dev, 4, &lw));
	P("cuMemFree after the fault", p_cuMemFree(dev));
	CUcontext c;
	P("pop after the fault", p_cuCtxPopCurrent(&c));
	P("push after the fault", p_cuCtxPushCurrent(ctx));
}

static const char *misaligned_ptx =
	".version 7.0\n.target sm_70\n.address_size 64\n"
	".visible .entry misaligned(.param .u64 p)\n{\n"
	"\t.reg .b64 %rd<3>;\n\t.reg .f32 %f<2>;\n"
	"\tld.param.u64 %rd1, [p];\n\tadd.u64 %rd2, %rd1, 2;\n\tld.global.f32 %f1, [%rd2];\n\tret;\n}\n";

static void misaligned(void) {
	setup();
	CUmodule mod;
	CUfunction fn;
	P("load PTX", p_cuModuleLoadData(&mod, misaligned_ptx));
	P("get function", p_cuModuleGetFunction(&fn, mod, "misaligned"));
	void *args[] = {&dev};
	P("launch, block of 2048", p_cuLaunchKernel(fn, 1, 1, 1, 2048, 1, 1, 0, stream, args, NULL));
	P("launch", p_cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, stream, args, NULL));
	P("sync after a misaligned load", p_cuStreamSynchronize(stream));
	CUdeviceptr p;
	P("cuMemAlloc after it", p_cuMemAlloc(&p, 64));
}

int main(int argc, char **argv) {
	setvbuf(stdout, NULL, _IOLBF, 0);
	open_all();
	const char *what = argc > 1 ? argv[1] : "main";
	if (strcmp(what, "sticky") == 0) {
		sticky();
	} else if (strcmp(what, "misaligned") == 0) {
		misaligned();
	} else if (strcmp(what, "init") == 0) {
		int n = -1;
		P("init", p_cuInit(0));
		P("device count", p_cuDeviceGetCount(&n));
		printf("device count value: %d\n", n);
	} else {
		main_cases();
	}
	return 0;
}
