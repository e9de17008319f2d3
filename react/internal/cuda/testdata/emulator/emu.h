// The CUDA emulator's internals (docs/gpu.md, "The emulator"): a strict
// host-memory stand-in for the CUDA driver API, cuBLAS, cuSOLVER and the
// runtime functions that react/internal/cuda calls, for tests without a GPU.
//
// Every API function is defined under the name the CUDA 13 headers give it,
// so the headers' macros map it to the versioned symbol (cuMemAlloc to
// cuMemAlloc_v2) and the compiler checks it against NVIDIA's prototype.
// One shared library holds all the state; scripts/cuda-emulator.sh installs
// it under every soname the binding opens.

#ifndef REACT_CUDA_EMU_H
#define REACT_CUDA_EMU_H

#include <stddef.h>
#include <stdint.h>

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cublas_v2.h>
#include <cusolverDn.h>

#define EMU_HIDDEN __attribute__((visibility("hidden")))
#define EMU_PRINTF(f, a) __attribute__((format(printf, f, a)))

// Device addresses are handed out from here up: a non-canonical x86-64
// address (bit 47 set, bits 48-63 clear), never mapped in user space, so a
// host dereference of a device pointer faults, and no host pointer ever
// passes for device memory.
#define EMU_ADDR_BASE 0x0000de0000000000ull
#define EMU_ADDR_END 0x0000ff0000000000ull

#define EMU_MAX_DEVICES 8

// Every handle the emulator hands out starts with an emu_obj and stays
// allocated for the life of the process (a destroyed one is marked dead),
// so a stale handle is recognised rather than dereferenced after free.
enum { OBJ_CTX = 1, OBJ_STREAM, OBJ_EVENT, OBJ_BLAS, OBJ_SOLVER, OBJ_MODULE, OBJ_FUNC };

typedef struct emu_obj {
	int kind;
	int alive;
	uint64_t id;
	struct emu_obj *next;
} emu_obj;

// A device's primary context.
struct CUctx_st {
	emu_obj obj;
	int device;
	int refs;       // cuDevicePrimaryCtxRetain count
	int runtime;    // the runtime holds a reference
	int active;     // refs > 0 or runtime
	CUresult sticky; // CUDA_SUCCESS, or the error every later call returns
	struct CUstream_st *null_stream; // the legacy default stream
};

typedef enum { OP_HTOD = 1, OP_DTOH, OP_DTOD, OP_MEMSET, OP_RECORD, OP_WAIT, OP_KERNEL } emu_op_kind;

// One piece of queued stream work.
typedef struct emu_op {
	emu_op_kind kind;
	uint64_t seq;
	const char *fn;       // the API function that queued it
	struct CUctx_st *ctx; // the stream's context, set by emu_enqueue
	// copies and memset
	CUdeviceptr dst, src;
	void *host;
	size_t n;
	unsigned char byte;
	// OP_RECORD
	struct CUevent_st *event;
	uint64_t gen;
	// OP_WAIT
	struct CUstream_st *wait;
	uint64_t wait_seq;
	// OP_KERNEL: run returns CUDA_SUCCESS or the fault's code (after
	// emu_fault); the arguments are the call's, taken when it was queued.
	CUresult (*run)(struct emu_op *op);
	int i[10];
	double d[2];
	CUdeviceptr p[5];
	// cuLaunchKernel: the function, the grid and block, the parameters'
	// values (copied when launched, as the driver does).
	struct CUfunc_st *func;
	unsigned dim[6];
	unsigned char args[256];
} emu_op;

struct CUstream_st {
	emu_obj obj;
	struct CUctx_st *ctx;
	unsigned flags;
	int legacy; // the context's NULL stream
	emu_op *q;
	size_t head, len, cap;
	uint64_t last_seq; // seq of the last op queued
	uint64_t done_seq; // seq of the last op executed (or dropped)
};

struct CUevent_st {
	emu_obj obj;
	struct CUctx_st *ctx;
	unsigned flags;
	uint64_t rec_gen;  // how many times it was recorded
	uint64_t done_gen; // the last record that executed
	struct CUstream_st *stream; // of the last record
	uint64_t rec_seq;  // seq of the last record op
	uint64_t t_ns;     // when the last record executed
};

struct cublasContext {
	emu_obj obj;
	struct CUctx_st *ctx;
	struct CUstream_st *stream; // NULL: the legacy stream
	cublasMath_t math;
};

// A module loaded from PTX (ptx.c), and its kernels.
struct CUmod_st {
	emu_obj obj;
	struct CUctx_st *ctx;
};

struct CUfunc_st;

struct cusolverDnContext {
	emu_obj obj;
	struct CUctx_st *ctx;
	struct CUstream_st *stream;
};

// A live allocation: size bytes at base (a device address), held in host.
typedef struct emu_alloc {
	CUdeviceptr base;
	size_t size;
	unsigned char *host;
	struct CUctx_st *ctx;
	uint64_t id;
} emu_alloc;

// Configuration from the environment, read once.
typedef struct emu_config {
	int devices;          // REACT_EMU_DEVICES (default 1)
	int driver_version;   // REACT_EMU_DRIVER_VERSION (default 13000)
	size_t total_memory;  // REACT_EMU_MEMORY_MB (default 16 GiB)
	int abort_mode;       // REACT_EMU_ABORT: 0 never, 1 misuse (default), 2 every reported error
	int tf32_override_off; // NVIDIA_TF32_OVERRIDE=0
} emu_config;

EMU_HIDDEN extern emu_config emu_cfg;

// The lock every API function holds while it reads or changes state
// (stream work executes under it too).
EMU_HIDDEN void emu_lock(void);
EMU_HIDDEN void emu_unlock(void);

EMU_HIDDEN void emu_configure(void);
EMU_HIDDEN int emu_initialized(void);
EMU_HIDDEN void emu_set_initialized(void);
EMU_HIDDEN struct CUctx_st *emu_primary(int device);

// Messages to stderr, each line "cuda-emulator: fn: ...". emu_misuse is
// for calls that are never right, whose result callers tend to ignore (a
// pop of an empty context stack, a double free): it aborts the process
// unless REACT_EMU_ABORT=0, so the caller's stack is printed.
EMU_HIDDEN void emu_report(const char *fn, const char *fmt, ...) EMU_PRINTF(2, 3);
EMU_HIDDEN void emu_misuse(const char *fn, const char *fmt, ...) EMU_PRINTF(2, 3);

// The calling thread's current context (top of its stack), or NULL.
EMU_HIDDEN struct CUctx_st *emu_current(void);
EMU_HIDDEN int emu_push(struct CUctx_st *c);
EMU_HIDDEN struct CUctx_st *emu_pop(void);
EMU_HIDDEN void emu_set_top(struct CUctx_st *c);

// emu_need_ctx checks a driver call that needs a context: the driver
// initialised, a context current on this thread, that context alive and
// without a sticky error. It returns CUDA_SUCCESS with *out set, or the
// error (reported).
EMU_HIDDEN CUresult emu_need_ctx(const char *fn, struct CUctx_st **out);

EMU_HIDDEN void emu_register(emu_obj *o, int kind);
EMU_HIDDEN int emu_valid(const void *p, int kind); // a live handle of kind
EMU_HIDDEN int emu_known(const void *p, int kind); // a handle of kind, live or dead

// Allocations.
EMU_HIDDEN CUresult emu_alloc_new(struct CUctx_st *c, size_t n, CUdeviceptr *out);
EMU_HIDDEN emu_alloc *emu_find(CUdeviceptr p); // the live allocation holding p
EMU_HIDDEN emu_alloc *emu_find_base(CUdeviceptr p);
EMU_HIDDEN void emu_alloc_free(emu_alloc *a);
EMU_HIDDEN size_t emu_live_bytes(int device);
EMU_HIDDEN int emu_fake(uintptr_t p); // in the emulator's device address range
// emu_range returns the host address of the n bytes at p when they lie in
// one live allocation of context c (any context when c is NULL), else NULL.
EMU_HIDDEN void *emu_range(struct CUctx_st *c, CUdeviceptr p, size_t n);
EMU_HIDDEN void emu_describe(CUdeviceptr p, size_t n, char *buf, size_t len);

// Streams: resolve a handle (NULL, CU_STREAM_LEGACY and
// CU_STREAM_PER_THREAD are c's legacy stream), queue work, execute it.
EMU_HIDDEN CUresult emu_stream(const char *fn, struct CUctx_st *c, CUstream h, struct CUstream_st **out);
EMU_HIDDEN struct CUstream_st *emu_stream_new(struct CUctx_st *c, unsigned flags, int legacy);
EMU_HIDDEN void emu_enqueue(struct CUstream_st *s, emu_op *op);
EMU_HIDDEN CUresult emu_run(struct CUstream_st *s, uint64_t upto);
// emu_sync_ctx executes the queued work of c's streams (only the legacy
// stream and the blocking streams when legacy_only), returning c's sticky
// error or CUDA_SUCCESS.
EMU_HIDDEN CUresult emu_sync_ctx(struct CUctx_st *c, int legacy_only);
EMU_HIDDEN void emu_ctx_destroy(struct CUctx_st *c);

// emu_fault makes c's error sticky (an illegal address, as a GPU kernel
// touching unmapped memory), drops its queued work, reports, and returns
// CUDA_ERROR_ILLEGAL_ADDRESS.
EMU_HIDDEN CUresult emu_fault(struct CUctx_st *c, const char *fn, const char *fmt, ...) EMU_PRINTF(3, 4);
// emu_fault_as is emu_fault with another sticky error (a misaligned
// address, a kernel that does not end).
EMU_HIDDEN CUresult emu_fault_as(struct CUctx_st *c, CUresult code, const char *fn, const char *fmt, ...) EMU_PRINTF(4, 5);

// emu_operand returns the host address of a kernel's operand: elems values
// of size bytes at p, inside one allocation of the op's context; or NULL
// after emu_fault, naming the operand.
EMU_HIDDEN void *emu_operand(struct CUctx_st *c, emu_op *op, const char *what, CUdeviceptr p, size_t elems, size_t size);

// BLAS extents: the values a strided vector or a column-major matrix spans.
EMU_HIDDEN size_t emu_vec_extent(int n, int inc);
EMU_HIDDEN size_t emu_mat_extent(int rows, int cols, int ld);

EMU_HIDDEN uint64_t emu_now_ns(void);
EMU_HIDDEN const char *emu_cu_name(CUresult r);

#endif
