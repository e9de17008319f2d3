// The driver API functions (libcuda.so.1) the binding calls, emulated.
// Each is defined under its cuda.h name; the header maps it to the
// versioned symbol (cuMemAlloc is cuMemAlloc_v2).

#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu.h"

// Every function runs under the lock: L ... U(result).
#define L emu_lock()
#define U(r)                    \
	do {                    \
		CUresult r_ = (r); \
		emu_unlock();   \
		return r_;      \
	} while (0)

static const char emu_device_name[] = "CUDA emulator (react-triton)";

CUresult CUDAAPI cuInit(unsigned int Flags) {
	emu_configure();
	if (Flags != 0) {
		emu_report("cuInit", "flags %u: must be 0: CUDA_ERROR_INVALID_VALUE", Flags);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (emu_cfg.devices == 0) {
		// As a driver with no visible device (CUDA_VISIBLE_DEVICES="").
		return CUDA_ERROR_NO_DEVICE;
	}
	L;
	emu_set_initialized();
	U(CUDA_SUCCESS);
}

CUresult CUDAAPI cuDriverGetVersion(int *driverVersion) {
	emu_configure();
	if (driverVersion == NULL) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	*driverVersion = emu_cfg.driver_version;
	return CUDA_SUCCESS;
}

static CUresult need_init(const char *fn) {
	if (!emu_initialized()) {
		emu_report(fn, "cuInit has not been called: CUDA_ERROR_NOT_INITIALIZED");
		return CUDA_ERROR_NOT_INITIALIZED;
	}
	return CUDA_SUCCESS;
}

static CUresult need_device(const char *fn, CUdevice dev) {
	CUresult r = need_init(fn);
	if (r == CUDA_SUCCESS && (dev < 0 || dev >= emu_cfg.devices)) {
		emu_report(fn, "device %d: the emulator has %d: CUDA_ERROR_INVALID_DEVICE", dev, emu_cfg.devices);
		r = CUDA_ERROR_INVALID_DEVICE;
	}
	return r;
}

CUresult CUDAAPI cuDeviceGetCount(int *count) {
	L;
	CUresult r = need_init("cuDeviceGetCount");
	if (r != CUDA_SUCCESS) {
		U(r);
	}
	if (count == NULL) {
		U(CUDA_ERROR_INVALID_VALUE);
	}
	*count = emu_cfg.devices;
	U(CUDA_SUCCESS);
}

CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal) {
	L;
	CUresult r = need_device("cuDeviceGet", ordinal);
	if (r != CUDA_SUCCESS) {
		U(r);
	}
	if (device == NULL) {
		U(CUDA_ERROR_INVALID_VALUE);
	}
	*device = ordinal;
	U(CUDA_SUCCESS);
}

CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev) {
	L;
	CUresult r = need_device("cuDeviceGetName", dev);
	if (r != CUDA_SUCCESS) {
		U(r);
	}
	if (name == NULL || len <= 0) {
		U(CUDA_ERROR_INVALID_VALUE);
	}
	snprintf(name, (size_t)len, "%s", emu_device_name);
	U(CUDA_SUCCESS);
}

CUresult CUDAAPI cuDeviceTotalMem(size_t *bytes, CUdevice dev) {
	L;
	CUresult r = need_device("cuDeviceTotalMem", dev);
	if (r != CUDA_SUCCESS) {
		U(r);
	}
	if (bytes == NULL) {
		U(CUDA_ERROR_INVALID_VALUE);
	}
	*bytes = emu_cfg.total_memory;
	U(CUDA_SUCCESS);
}

// ---- contexts ----

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
	L;
	CUresult r = need_device("cuDevicePrimaryCtxRetain", dev);
	if (r != CUDA_SUCCESS) {
		U(r);
	}
	if (pctx == NULL) {
		U(CUDA_ERROR_INVALID_VALUE);
	}
	struct CUctx_st *c = emu_primary(dev);
	c->refs++;
	c->active = 1;
	*pctx = c;
	U(CUDA_SUCCESS);
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev) {
	L;
	CUresult r = need_device("cuDevicePrimaryCtxRelease", dev);
	if (r != CUDA_SUCCESS) {
		U(r);
	}
	struct CUctx_st *c = emu_primary(dev);
	if (c->refs == 0) {
		emu_misuse("cuDevicePrimaryCtxRelease", "device %d's primary context was not retained (a second release?): CUDA_ERROR_INVALID_CONTEXT", dev);
		U(CUDA_ERROR_INVALID_CONTEXT);
	}
	if (--c->refs == 0 && !c->runtime) {
		emu_ctx_destroy(c);
	}
	U(CUDA_SUCCESS);
}

static CUresult check_ctx_handle(const char *fn, CUcontext ctx) {
	if (!emu_known(ctx, OBJ_CTX)) {
		emu_report(fn, "%p is not a context: CUDA_ERROR_INVALID_CONTEXT", (void *)ctx);
		return CUDA_ERROR_INVALID_CONTEXT;
	}
	if (!ctx->active) {
		emu_report(fn, "context %p is not active (its primary context was released): CUDA_ERROR_INVALID_CONTEXT", (void *)ctx);
		return CUDA_ERROR_INVALID_CONTEXT;
	}
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx) {
	L;
	CUresult r = need_init("cuCtxPushCurrent");
	if (r == CUDA_SUCCESS) {
		r = check_ctx_handle("cuCtxPushCurrent", ctx);
	}
	if (r != CUDA_SUCCESS) {
		U(r);
	}
	if (!emu_push(ctx)) {
		emu_misuse("cuCtxPushCurrent", "this thread's context stack is full: pushes without pops");
		U(CUDA_ERROR_INVALID_VALUE);
	}
	U(CUDA_SUCCESS);
}

CUresult CUDAAPI cuCtxPopCurrent(CUcontext *pctx) {
	L;
	CUresult r = need_init("cuCtxPopCurrent");
	if (r != CUDA_SUCCESS) {
		U(r);
	}
	struct CUctx_st *c = emu_pop();
	if (c == NULL) {
		// Callers ignore this result: a pop on another OS thread than the
		// push (a lost runtime.LockOSThread) shows here.
		emu_misuse("cuCtxPopCurrent", "no context is current on this thread (thread %lu): popped more than pushed, or pushed on another thread: CUDA_ERROR_INVALID_CONTEXT",
		           (unsigned long)pthread_self());
		U(CUDA_ERROR_INVALID_CONTEXT);
	}
	if (pctx != NULL) {
		*pctx = c;
	}
	U(CUDA_SUCCESS);
}

CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx) {
	L;
	CUresult r = need_init("cuCtxGetCurrent");
	if (r != CUDA_SUCCESS) {
		U(r);
	}
	if (pctx == NULL) {
		U(CUDA_ERROR_INVALID_VALUE);
	}
	*pctx = emu_current();
	U(CUDA_SUCCESS);
}

CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) {
	L;
	CUresult r = need_init("cuCtxSetCurrent");
	if (r == CUDA_SUCCESS && ctx != NULL) {
		r = check_ctx_handle("cuCtxSetCurrent", ctx);
	}
	if (r != CUDA_SUCCESS) {
		U(r);
	}
	emu_set_top(ctx);
	U(CUDA_SUCCESS);
}

CUresult CUDAAPI cuCtxSynchronize(void) {
	L;
	struct CUctx_st *c;
	CUresult r = emu_need_ctx("cuCtxSynchronize", &c);
	if (r != CUDA_SUCCESS) {
		U(r);
	}
	U(emu_sync_ctx(c, 0));
}

// ---- memory ----

CUresult CUDAAPI cuMemAlloc(CUdeviceptr *dptr, size_t bytesize) {
	L;
	struct CUctx_st *c;
	CUresult r = emu_need_ctx("cuMemAlloc", &c);
	if (r != CUDA_SUCCESS) {
		U(r);
	}
	if (dptr == NULL || bytesize == 0) {
		emu_report("cuMemAlloc", "%s: CUDA_ERROR_INVALID_VALUE", dptr == NULL ? "dptr is NULL" : "0 bytes");
		U(CUDA_ERROR_INVALID_VALUE);
	}
	r = emu_alloc_new(c, bytesize, dptr);
	if (r != CUDA_SUCCESS) {
		emu_report("cuMemAlloc", "%zu bytes: out of the emulated device's %zu bytes (%zu in use)", bytesize,
		           emu_cfg.total_memory, emu_live_bytes(c->device));
	}
	U(r);
}

CUresult CUDAAPI cuMemFree(CUdeviceptr dptr) {
	L;
	struct CUctx_st *c;
	CUresult r = emu_need_ctx("cuMemFree", &c);
	if (r != CUDA_SUCCESS) {
		U(r);
	}
	emu_alloc *a = emu_find_base(dptr);
	if (a == NULL || a->ctx != c) {
		char d[512];
		emu_describe(dptr, 1, d, sizeof d);
		// Callers ignore this result: a double free shows here.
		emu_misuse("cuMemFree", "%#llx is not the start of a live allocation of the current context (%s): CUDA_ERROR_INVALID_VALUE",
		           (unsigned long long)dptr, d);
		U(CUDA_ERROR_INVALID_VALUE);
	}
	// cuMemFree synchronises: queued work that uses the memory runs first.
	r = emu_sync_ctx(c, 0);
	if (r != CUDA_SUCCESS) {
		U(r);
	}
	emu_alloc_free(emu_find_base(dptr));
	U(CUDA_SUCCESS);
}

CUresult CUDAAPI cuMemGetInfo(size_t *free, size_t *total) {
	L;
	struct CUctx_st *c;
	CUresult r = emu_need_ctx("cuMemGetInfo", &c);
	if (r != CUDA_SUCCESS) {
		U(r);
	}
	if (free == NULL || total == NULL) {
		U(CUDA_ERROR_INVALID_VALUE);
	}
	*total = emu_cfg.total_memory;
	*free = emu_cfg.total_memory - emu_live_bytes(c->device);
	U(CUDA_SUCCESS);
}

// check_device_range validates n bytes of device memory at p for a copy
// or memset when it is queued, as the driver does (a bad range is
// CUDA_ERROR_INVALID_VALUE then, not a fault later).
static CUresult check_device_range(const char *fn, const char *what, struct CUctx_st *c, CUdeviceptr p, size_t n) {
	if (emu_range(c, p, n) != NULL) {
		return CUDA_SUCCESS;
	}
	char d[512];
	emu_describe(p, n, d, sizeof d);
	emu_report(fn, "%s: %s: CUDA_ERROR_INVALID_VALUE", what, d);
	return CUDA_ERROR_INVALID_VALUE;
}

static CUresult check_host(const char *fn, const char *what, const void *p) {
	if (p == NULL) {
		emu_report(fn, "%s: the host pointer is NULL: CUDA_ERROR_INVALID_VALUE", what);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (emu_fake((uintptr_t)p)) {
		emu_report(fn, "%s: %p is a device address, passed as host memory: CUDA_ERROR_INVALID_VALUE", what, p);
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

// queue_copy validates and queues one copy or memset.
static CUresult queue_copy(const char *fn, emu_op *op, CUstream hStream) {
	struct CUctx_st *c;
	struct CUstream_st *s;
	CUresult r = emu_need_ctx(fn, &c);
	if (r == CUDA_SUCCESS) {
		r = emu_stream(fn, c, hStream, &s);
	}
	if (r != CUDA_SUCCESS || op->n == 0) {
		return r;
	}
	switch (op->kind) {
	case OP_HTOD:
		if ((r = check_device_range(fn, "destination", c, op->dst, op->n)) == CUDA_SUCCESS) {
			r = check_host(fn, "source", op->host);
		}
		break;
	case OP_DTOH:
		if ((r = check_device_range(fn, "source", c, op->src, op->n)) == CUDA_SUCCESS) {
			r = check_host(fn, "destination", op->host);
		}
		break;
	case OP_DTOD:
		if ((r = check_device_range(fn, "destination", c, op->dst, op->n)) == CUDA_SUCCESS) {
			r = check_device_range(fn, "source", c, op->src, op->n);
		}
		if (r == CUDA_SUCCESS && op->dst < op->src + op->n && op->src < op->dst + op->n) {
			emu_report(fn, "source and destination overlap (%zu bytes at %#llx and %#llx): the result is undefined: CUDA_ERROR_INVALID_VALUE",
			           op->n, (unsigned long long)op->src, (unsigned long long)op->dst);
			r = CUDA_ERROR_INVALID_VALUE;
		}
		break;
	default:
		r = check_device_range(fn, "destination", c, op->dst, op->n);
	}
	if (r == CUDA_SUCCESS) {
		op->fn = fn;
		emu_enqueue(s, op);
	}
	return r;
}

CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream) {
	L;
	emu_op op = {.kind = OP_HTOD, .dst = dstDevice, .host = (void *)srcHost, .n = ByteCount};
	U(queue_copy("cuMemcpyHtoDAsync", &op, hStream));
}

CUresult CUDAAPI cuMemcpyDtoHAsync(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream) {
	L;
	emu_op op = {.kind = OP_DTOH, .src = srcDevice, .host = dstHost, .n = ByteCount};
	U(queue_copy("cuMemcpyDtoHAsync", &op, hStream));
}

CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream) {
	L;
	emu_op op = {.kind = OP_DTOD, .dst = dstDevice, .src = srcDevice, .n = ByteCount};
	U(queue_copy("cuMemcpyDtoDAsync", &op, hStream));
}

CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream) {
	L;
	emu_op op = {.kind = OP_MEMSET, .dst = dstDevice, .byte = uc, .n = N};
	U(queue_copy("cuMemsetD8Async", &op, hStream));
}

CUresult CUDAAPI cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr) {
	L;
	CUresult r = need_init("cuPointerGetAttribute");
	if (r != CUDA_SUCCESS) {
		U(r);
	}
	if (data == NULL) {
		U(CUDA_ERROR_INVALID_VALUE);
	}
	emu_alloc *a = emu_find(ptr);
	if (a == NULL) {
		// As the driver answers for host memory it does not know.
		U(CUDA_ERROR_INVALID_VALUE);
	}
	if (a->ctx->sticky != CUDA_SUCCESS) {
		U(a->ctx->sticky);
	}
	switch (attribute) {
	case CU_POINTER_ATTRIBUTE_CONTEXT:
		*(CUcontext *)data = a->ctx;
		break;
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		*(unsigned int *)data = CU_MEMORYTYPE_DEVICE;
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
		*(CUdeviceptr *)data = ptr;
		break;
	case CU_POINTER_ATTRIBUTE_HOST_POINTER:
		// Device memory has no host address.
		U(CUDA_ERROR_INVALID_VALUE);
	case CU_POINTER_ATTRIBUTE_BUFFER_ID:
		*(unsigned long long *)data = a->id;
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
		*(int *)data = a->ctx->device;
		break;
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
		*(CUdeviceptr *)data = a->base;
		break;
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
		*(size_t *)data = a->size;
		break;
	default:
		emu_report("cuPointerGetAttribute", "attribute %d is not emulated: CUDA_ERROR_NOT_SUPPORTED", (int)attribute);
		U(CUDA_ERROR_NOT_SUPPORTED);
	}
	U(CUDA_SUCCESS);
}

// ---- streams ----

CUresult CUDAAPI cuStreamCreate(CUstream *phStream, unsigned int Flags) {
	L;
	struct CUctx_st *c;
	CUresult r = emu_need_ctx("cuStreamCreate", &c);
	if (r != CUDA_SUCCESS) {
		U(r);
	}
	if (phStream == NULL || (Flags & ~(unsigned)CU_STREAM_NON_BLOCKING) != 0) {
		emu_report("cuStreamCreate", "flags %#x: CUDA_ERROR_INVALID_VALUE", Flags);
		U(CUDA_ERROR_INVALID_VALUE);
	}
	struct CUstream_st *s = emu_stream_new(c, Flags, 0);
	if (s == NULL) {
		U(CUDA_ERROR_OUT_OF_MEMORY);
	}
	*phStream = s;
	U(CUDA_SUCCESS);
}

CUresult CUDAAPI cuStreamDestroy(CUstream hStream) {
	L;
	struct CUctx_st *c;
	CUresult r = emu_need_ctx("cuStreamDestroy", &c);
	if (r != CUDA_SUCCESS) {
		U(r);
	}
	if (hStream == NULL || hStream == CU_STREAM_LEGACY || hStream == CU_STREAM_PER_THREAD || !emu_valid(hStream, OBJ_STREAM)) {
		emu_misuse("cuStreamDestroy", "%p is not a live stream (destroyed twice?): CUDA_ERROR_INVALID_HANDLE", (void *)hStream);
		U(CUDA_ERROR_INVALID_HANDLE);
	}
	// The queued work completes, then the stream goes.
	emu_run(hStream, UINT64_MAX);
	hStream->obj.alive = 0;
	U(CUDA_SUCCESS);
}

CUresult CUDAAPI cuStreamSynchronize(CUstream hStream) {
	L;
	struct CUctx_st *c;
	struct CUstream_st *s;
	CUresult r = emu_need_ctx("cuStreamSynchronize", &c);
	if (r == CUDA_SUCCESS) {
		r = emu_stream("cuStreamSynchronize", c, hStream, &s);
	}
	if (r != CUDA_SUCCESS) {
		U(r);
	}
	U(emu_run(s, UINT64_MAX));
}

CUresult CUDAAPI cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags) {
	L;
	struct CUctx_st *c;
	struct CUstream_st *s;
	CUresult r = emu_need_ctx("cuStreamWaitEvent", &c);
	if (r == CUDA_SUCCESS) {
		r = emu_stream("cuStreamWaitEvent", c, hStream, &s);
	}
	if (r != CUDA_SUCCESS) {
		U(r);
	}
	if (!emu_valid(hEvent, OBJ_EVENT)) {
		emu_report("cuStreamWaitEvent", "%p is not a live event: CUDA_ERROR_INVALID_HANDLE", (void *)hEvent);
		U(CUDA_ERROR_INVALID_HANDLE);
	}
	if (Flags != 0) {
		emu_report("cuStreamWaitEvent", "flags %#x are not emulated: CUDA_ERROR_INVALID_VALUE", Flags);
		U(CUDA_ERROR_INVALID_VALUE);
	}
	if (hEvent->rec_gen == 0 || hEvent->done_gen == hEvent->rec_gen) {
		U(CUDA_SUCCESS); // never recorded, or complete: nothing to wait for
	}
	emu_op op = {.kind = OP_WAIT, .fn = "cuStreamWaitEvent", .wait = hEvent->stream, .wait_seq = hEvent->rec_seq};
	emu_enqueue(s, &op);
	U(CUDA_SUCCESS);
}

// ---- events ----

CUresult CUDAAPI cuEventCreate(CUevent *phEvent, unsigned int Flags) {
	L;
	struct CUctx_st *c;
	CUresult r = emu_need_ctx("cuEventCreate", &c);
	if (r != CUDA_SUCCESS) {
		U(r);
	}
	if (phEvent == NULL || (Flags & ~(unsigned)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING)) != 0) {
		emu_report("cuEventCreate", "flags %#x: CUDA_ERROR_INVALID_VALUE", Flags);
		U(CUDA_ERROR_INVALID_VALUE);
	}
	struct CUevent_st *e = calloc(1, sizeof *e);
	if (e == NULL) {
		U(CUDA_ERROR_OUT_OF_MEMORY);
	}
	emu_register(&e->obj, OBJ_EVENT);
	e->ctx = c;
	e->flags = Flags;
	*phEvent = e;
	U(CUDA_SUCCESS);
}

CUresult CUDAAPI cuEventRecord(CUevent hEvent, CUstream hStream) {
	L;
	struct CUctx_st *c;
	struct CUstream_st *s;
	CUresult r = emu_need_ctx("cuEventRecord", &c);
	if (r == CUDA_SUCCESS) {
		r = emu_stream("cuEventRecord", c, hStream, &s);
	}
	if (r != CUDA_SUCCESS) {
		U(r);
	}
	if (!emu_valid(hEvent, OBJ_EVENT) || hEvent->ctx != c) {
		emu_report("cuEventRecord", "%p is not a live event of the current context: CUDA_ERROR_INVALID_HANDLE", (void *)hEvent);
		U(CUDA_ERROR_INVALID_HANDLE);
	}
	emu_op op = {.kind = OP_RECORD, .fn = "cuEventRecord", .event = hEvent, .gen = ++hEvent->rec_gen};
	emu_enqueue(s, &op);
	hEvent->stream = s;
	hEvent->rec_seq = s->last_seq; // the record op's
	U(CUDA_SUCCESS);
}

static CUresult need_event(const char *fn, CUevent e, struct CUctx_st **c) {
	CUresult r = emu_need_ctx(fn, c);
	if (r != CUDA_SUCCESS) {
		return r;
	}
	if (!emu_valid(e, OBJ_EVENT)) {
		emu_report(fn, "%p is not a live event: CUDA_ERROR_INVALID_HANDLE", (void *)e);
		return CUDA_ERROR_INVALID_HANDLE;
	}
	return e->ctx->sticky;
}

CUresult CUDAAPI cuEventSynchronize(CUevent hEvent) {
	L;
	struct CUctx_st *c;
	CUresult r = need_event("cuEventSynchronize", hEvent, &c);
	if (r != CUDA_SUCCESS) {
		U(r);
	}
	if (hEvent->rec_gen == 0 || hEvent->done_gen == hEvent->rec_gen) {
		U(CUDA_SUCCESS);
	}
	U(emu_run(hEvent->stream, hEvent->rec_seq));
}

CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd) {
	L;
	struct CUctx_st *c;
	CUresult r = need_event("cuEventElapsedTime", hStart, &c);
	if (r == CUDA_SUCCESS) {
		r = need_event("cuEventElapsedTime", hEnd, &c);
	}
	if (r != CUDA_SUCCESS) {
		U(r);
	}
	if (pMilliseconds == NULL) {
		U(CUDA_ERROR_INVALID_VALUE);
	}
	if (hStart->rec_gen == 0 || hEnd->rec_gen == 0) {
		emu_report("cuEventElapsedTime", "an event was never recorded: CUDA_ERROR_INVALID_HANDLE");
		U(CUDA_ERROR_INVALID_HANDLE);
	}
	if ((hStart->flags | hEnd->flags) & CU_EVENT_DISABLE_TIMING) {
		emu_report("cuEventElapsedTime", "an event was created with CU_EVENT_DISABLE_TIMING: CUDA_ERROR_INVALID_HANDLE");
		U(CUDA_ERROR_INVALID_HANDLE);
	}
	if (hStart->done_gen != hStart->rec_gen || hEnd->done_gen != hEnd->rec_gen) {
		// Work before a record is queued, not done: synchronise first.
		emu_report("cuEventElapsedTime", "an event's last record has not completed (synchronize on it first): CUDA_ERROR_NOT_READY");
		U(CUDA_ERROR_NOT_READY);
	}
	double ms = ((double)hEnd->t_ns - (double)hStart->t_ns) / 1e6;
	*pMilliseconds = (float)(ms > 1e-3 ? ms : 1e-3); // a small positive time
	U(CUDA_SUCCESS);
}

CUresult CUDAAPI cuEventDestroy(CUevent hEvent) {
	L;
	struct CUctx_st *c;
	CUresult r = emu_need_ctx("cuEventDestroy", &c);
	if (r != CUDA_SUCCESS) {
		U(r);
	}
	if (!emu_valid(hEvent, OBJ_EVENT)) {
		emu_misuse("cuEventDestroy", "%p is not a live event (destroyed twice?): CUDA_ERROR_INVALID_HANDLE", (void *)hEvent);
		U(CUDA_ERROR_INVALID_HANDLE);
	}
	hEvent->obj.alive = 0;
	U(CUDA_SUCCESS);
}

// ---- error names ----

static const struct {
	CUresult code;
	const char *name;
} cu_names[] = {
#define N(x) {x, #x},
#include "cu_names.inc"
#undef N
};

const char *emu_cu_name(CUresult r) {
	for (size_t i = 0; i < sizeof cu_names / sizeof cu_names[0]; i++) {
		if (cu_names[i].code == r) {
			return cu_names[i].name;
		}
	}
	return NULL;
}

static const struct {
	CUresult code;
	const char *text;
} cu_texts[] = {
	{CUDA_SUCCESS, "no error"},
	{CUDA_ERROR_INVALID_VALUE, "invalid argument"},
	{CUDA_ERROR_OUT_OF_MEMORY, "out of memory"},
	{CUDA_ERROR_NOT_INITIALIZED, "initialization error"},
	{CUDA_ERROR_STUB_LIBRARY, "CUDA driver is a stub library"},
	{CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"},
	{CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"},
	{CUDA_ERROR_INVALID_CONTEXT, "invalid device context"},
	{CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"},
	{CUDA_ERROR_NOT_READY, "device not ready"},
	{CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered"},
	{CUDA_ERROR_NOT_SUPPORTED, "operation not supported"},
};

CUresult CUDAAPI cuGetErrorName(CUresult error, const char **pStr) {
	if (pStr == NULL) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	*pStr = emu_cu_name(error);
	return *pStr != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char **pStr) {
	if (pStr == NULL) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	*pStr = NULL;
	if (emu_cu_name(error) == NULL) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	for (size_t i = 0; i < sizeof cu_texts / sizeof cu_texts[0]; i++) {
		if (cu_texts[i].code == error) {
			*pStr = cu_texts[i].text;
			return CUDA_SUCCESS;
		}
	}
	*pStr = emu_cu_name(error); // the emulator has no text for it: its name
	return CUDA_SUCCESS;
}
