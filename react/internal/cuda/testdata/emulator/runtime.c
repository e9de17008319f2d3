// The CUDA runtime functions (libcudart.so.13) the tests call, emulated:
// as the real runtime, they work in the primary context of the calling
// thread's device (cudaSetDevice; 0 by default) and need no context to be
// current. Unlike the real runtime, they do not make that context current
// on the thread either: a driver call after them still needs its own push.

#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "emu.h"

static _Thread_local int rt_device;
static _Thread_local cudaError_t rt_last;

static cudaError_t rt_result(cudaError_t e) {
	if (e != cudaSuccess) {
		rt_last = e;
	}
	return e;
}

#define L emu_lock()
#define U(r)                                 \
	do {                                 \
		cudaError_t r_ = rt_result(r); \
		emu_unlock();                \
		return r_;                   \
	} while (0)

// rt_context returns the primary context of the thread's device, retained
// by the runtime for the life of the process, as the runtime does.
static cudaError_t rt_context(const char *fn, struct CUctx_st **out) {
	emu_configure();
	if (emu_cfg.devices == 0) {
		return cudaErrorNoDevice;
	}
	emu_set_initialized(); // the runtime initialises the driver
	if (rt_device >= emu_cfg.devices) {
		emu_report(fn, "device %d: the emulator has %d: cudaErrorInvalidDevice", rt_device, emu_cfg.devices);
		return cudaErrorInvalidDevice;
	}
	struct CUctx_st *c = emu_primary(rt_device);
	c->runtime = 1;
	c->active = 1;
	if (c->sticky != CUDA_SUCCESS) {
		return (cudaError_t)c->sticky; // 700 is cudaErrorIllegalAddress in both
	}
	*out = c;
	return cudaSuccess;
}

cudaError_t CUDARTAPI cudaMalloc(void **devPtr, size_t size) {
	L;
	struct CUctx_st *c;
	cudaError_t e = rt_context("cudaMalloc", &c);
	if (e != cudaSuccess) {
		U(e);
	}
	if (devPtr == NULL) {
		U(cudaErrorInvalidValue);
	}
	if (size == 0) {
		*devPtr = NULL;
		U(cudaSuccess);
	}
	CUdeviceptr p;
	if (emu_alloc_new(c, size, &p) != CUDA_SUCCESS) {
		emu_report("cudaMalloc", "%zu bytes: out of the emulated device's memory: cudaErrorMemoryAllocation", size);
		U(cudaErrorMemoryAllocation);
	}
	*devPtr = (void *)(uintptr_t)p;
	U(cudaSuccess);
}

cudaError_t CUDARTAPI cudaFree(void *devPtr) {
	L;
	struct CUctx_st *c;
	cudaError_t e = rt_context("cudaFree", &c);
	if (e != cudaSuccess || devPtr == NULL) {
		U(e);
	}
	emu_alloc *a = emu_find_base((CUdeviceptr)(uintptr_t)devPtr);
	if (a == NULL || a->ctx != c) {
		char d[512];
		emu_describe((CUdeviceptr)(uintptr_t)devPtr, 1, d, sizeof d);
		emu_report("cudaFree", "%p is not the start of a live allocation of the device's primary context (%s): cudaErrorInvalidValue", devPtr, d);
		U(cudaErrorInvalidValue);
	}
	CUresult r = emu_sync_ctx(c, 0); // cudaFree synchronises the device
	if (r != CUDA_SUCCESS) {
		U((cudaError_t)r);
	}
	emu_alloc_free(emu_find_base((CUdeviceptr)(uintptr_t)devPtr));
	U(cudaSuccess);
}

static const char *kind_name(enum cudaMemcpyKind k) {
	switch (k) {
	case cudaMemcpyHostToHost:
		return "host to host";
	case cudaMemcpyHostToDevice:
		return "host to device";
	case cudaMemcpyDeviceToHost:
		return "device to host";
	case cudaMemcpyDeviceToDevice:
		return "device to device";
	default:
		return "default";
	}
}

// rt_side returns the host address of n bytes at p, device memory of c
// when device, host memory otherwise; NULL (reported) when p is not that.
static void *rt_side(const char *what, struct CUctx_st *c, const void *p, size_t n, int device, enum cudaMemcpyKind k) {
	if (device) {
		void *h = emu_range(c, (CUdeviceptr)(uintptr_t)p, n);
		if (h == NULL) {
			char d[512];
			emu_describe((CUdeviceptr)(uintptr_t)p, n, d, sizeof d);
			emu_report("cudaMemcpy", "%s (%s): %s: cudaErrorInvalidValue", what, kind_name(k), d);
		}
		return h;
	}
	if (p == NULL || emu_fake((uintptr_t)p)) {
		emu_report("cudaMemcpy", "%s (%s): %p is not host memory: cudaErrorInvalidValue", what, kind_name(k), p);
		return NULL;
	}
	return (void *)p;
}

cudaError_t CUDARTAPI cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind) {
	L;
	struct CUctx_st *c;
	cudaError_t e = rt_context("cudaMemcpy", &c);
	if (e != cudaSuccess || count == 0) {
		U(e);
	}
	int ddev, sdev;
	switch (kind) {
	case cudaMemcpyHostToHost:
		ddev = sdev = 0;
		break;
	case cudaMemcpyHostToDevice:
		ddev = 1, sdev = 0;
		break;
	case cudaMemcpyDeviceToHost:
		ddev = 0, sdev = 1;
		break;
	case cudaMemcpyDeviceToDevice:
		ddev = sdev = 1;
		break;
	case cudaMemcpyDefault:
		ddev = emu_fake((uintptr_t)dst), sdev = emu_fake((uintptr_t)src);
		break;
	default:
		emu_report("cudaMemcpy", "kind %d: cudaErrorInvalidMemcpyDirection", (int)kind);
		U(cudaErrorInvalidMemcpyDirection);
	}
	// A blocking copy on the legacy stream: it waits for the legacy and
	// blocking streams' work (not the non-blocking streams').
	CUresult r = emu_sync_ctx(c, 1);
	if (r != CUDA_SUCCESS) {
		U((cudaError_t)r);
	}
	void *d = rt_side("destination", c, dst, count, ddev, kind);
	void *s = d == NULL ? NULL : rt_side("source", c, src, count, sdev, kind);
	if (s == NULL) {
		U(cudaErrorInvalidValue);
	}
	memmove(d, s, count);
	U(cudaSuccess);
}

cudaError_t CUDARTAPI cudaDeviceSynchronize(void) {
	L;
	struct CUctx_st *c;
	cudaError_t e = rt_context("cudaDeviceSynchronize", &c);
	if (e != cudaSuccess) {
		U(e);
	}
	U((cudaError_t)emu_sync_ctx(c, 0));
}

cudaError_t CUDARTAPI cudaGetDeviceCount(int *count) {
	emu_configure();
	if (count == NULL) {
		return rt_result(cudaErrorInvalidValue);
	}
	*count = emu_cfg.devices;
	return rt_result(emu_cfg.devices == 0 ? cudaErrorNoDevice : cudaSuccess);
}

cudaError_t CUDARTAPI cudaSetDevice(int device) {
	emu_configure();
	if (device < 0 || device >= emu_cfg.devices) {
		return rt_result(cudaErrorInvalidDevice);
	}
	rt_device = device;
	return cudaSuccess;
}

cudaError_t CUDARTAPI cudaGetDevice(int *device) {
	if (device == NULL) {
		return rt_result(cudaErrorInvalidValue);
	}
	*device = rt_device;
	return cudaSuccess;
}

cudaError_t CUDARTAPI cudaGetLastError(void) {
	cudaError_t e = rt_last;
	rt_last = cudaSuccess;
	return e;
}

cudaError_t CUDARTAPI cudaPeekAtLastError(void) { return rt_last; }

static const struct {
	cudaError_t code;
	const char *name;
} rt_names[] = {
#define R(x) {x, #x},
#include "rt_names.inc"
#undef R
};

static const char *rt_name(cudaError_t e) {
	for (size_t i = 0; i < sizeof rt_names / sizeof rt_names[0]; i++) {
		if (rt_names[i].code == e) {
			return rt_names[i].name;
		}
	}
	return NULL;
}

const char *CUDARTAPI cudaGetErrorName(cudaError_t error) {
	const char *s = rt_name(error);
	return s != NULL ? s : "cudaErrorUnknown";
}

const char *CUDARTAPI cudaGetErrorString(cudaError_t error) {
	switch (error) {
	case cudaSuccess:
		return "no error";
	case cudaErrorInvalidValue:
		return "invalid argument";
	case cudaErrorMemoryAllocation:
		return "out of memory";
	case cudaErrorNoDevice:
		return "no CUDA-capable device is detected";
	case cudaErrorInvalidDevice:
		return "invalid device ordinal";
	case cudaErrorIllegalAddress:
		return "an illegal memory access was encountered";
	default:
		break;
	}
	const char *s = rt_name(error);
	return s != NULL ? s : "unrecognized error code";
}
