// The emulator's state: configuration, the lock, messages, the per-thread
// context stacks, handles, allocations, and stream work queued and executed
// (docs/gpu.md, "The emulator").

#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "emu.h"

emu_config emu_cfg;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t configured = PTHREAD_ONCE_INIT;
static int initialized;

void emu_lock(void) { pthread_mutex_lock(&mu); }
void emu_unlock(void) { pthread_mutex_unlock(&mu); }

static long env_long(const char *name, long def, long lo, long hi) {
	const char *s = getenv(name);
	if (s == NULL || *s == 0) {
		return def;
	}
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno != 0 || *end != 0 || v < lo || v > hi) {
		fprintf(stderr, "cuda-emulator: %s=%s: want an integer in [%ld, %ld]; using %ld\n", name, s, lo, hi, def);
		return def;
	}
	return v;
}

static void configure(void) {
	emu_cfg.devices = (int)env_long("REACT_EMU_DEVICES", 1, 0, EMU_MAX_DEVICES);
	emu_cfg.driver_version = (int)env_long("REACT_EMU_DRIVER_VERSION", 13000, 0, 1000000);
	emu_cfg.total_memory = (size_t)env_long("REACT_EMU_MEMORY_MB", 16384, 1, 1L << 24) << 20;
	const char *a = getenv("REACT_EMU_ABORT");
	emu_cfg.abort_mode = 1;
	if (a != NULL && strcmp(a, "0") == 0) {
		emu_cfg.abort_mode = 0;
	} else if (a != NULL && strcmp(a, "all") == 0) {
		emu_cfg.abort_mode = 2;
	}
	const char *tf = getenv("NVIDIA_TF32_OVERRIDE");
	emu_cfg.tf32_override_off = tf != NULL && strcmp(tf, "0") == 0;
}

void emu_configure(void) { pthread_once(&configured, configure); }
int emu_initialized(void) { return initialized; }
void emu_set_initialized(void) { initialized = 1; }

static void vreport(const char *fn, const char *fmt, va_list ap) {
	char buf[1024];
	vsnprintf(buf, sizeof buf, fmt, ap);
	fprintf(stderr, "cuda-emulator: %s: %s\n", fn, buf);
}

void emu_report(const char *fn, const char *fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	vreport(fn, fmt, ap);
	va_end(ap);
	if (emu_cfg.abort_mode == 2) {
		fprintf(stderr, "cuda-emulator: aborting (REACT_EMU_ABORT=all)\n");
		abort();
	}
}

void emu_misuse(const char *fn, const char *fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	vreport(fn, fmt, ap);
	va_end(ap);
	if (emu_cfg.abort_mode != 0) {
		fprintf(stderr, "cuda-emulator: aborting on misuse (REACT_EMU_ABORT=0 to carry on)\n");
		abort();
	}
}

uint64_t emu_now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

// ---- the calling thread's context stack ----

#define STACK_MAX 32
static _Thread_local struct CUctx_st *stack[STACK_MAX];
static _Thread_local int depth;

struct CUctx_st *emu_current(void) { return depth > 0 ? stack[depth - 1] : NULL; }

int emu_push(struct CUctx_st *c) {
	if (depth == STACK_MAX) {
		return 0;
	}
	stack[depth++] = c;
	return 1;
}

struct CUctx_st *emu_pop(void) { return depth > 0 ? stack[--depth] : NULL; }

void emu_set_top(struct CUctx_st *c) {
	if (depth == 0) {
		if (c != NULL) {
			stack[depth++] = c;
		}
	} else if (c == NULL) {
		depth--;
	} else {
		stack[depth - 1] = c;
	}
}

CUresult emu_need_ctx(const char *fn, struct CUctx_st **out) {
	if (!initialized) {
		emu_report(fn, "cuInit has not been called: CUDA_ERROR_NOT_INITIALIZED");
		return CUDA_ERROR_NOT_INITIALIZED;
	}
	struct CUctx_st *c = emu_current();
	if (c == NULL) {
		emu_report(fn, "no context is current on this thread (thread %lu): CUDA_ERROR_INVALID_CONTEXT",
		           (unsigned long)pthread_self());
		return CUDA_ERROR_INVALID_CONTEXT;
	}
	if (!c->active) {
		emu_report(fn, "the current context was destroyed (its primary context released): CUDA_ERROR_INVALID_CONTEXT");
		return CUDA_ERROR_INVALID_CONTEXT;
	}
	if (c->sticky != CUDA_SUCCESS) {
		return c->sticky;
	}
	*out = c;
	return CUDA_SUCCESS;
}

// ---- handles ----

static emu_obj *objects;
static uint64_t next_id = 1;

void emu_register(emu_obj *o, int kind) {
	o->kind = kind;
	o->alive = 1;
	o->id = next_id++;
	o->next = objects;
	objects = o;
}

int emu_known(const void *p, int kind) {
	for (emu_obj *o = objects; o != NULL; o = o->next) {
		if ((const void *)o == p) {
			return o->kind == kind;
		}
	}
	return 0;
}

int emu_valid(const void *p, int kind) { return emu_known(p, kind) && ((const emu_obj *)p)->alive; }

// ---- devices and their primary contexts ----

static struct CUctx_st *primaries[EMU_MAX_DEVICES];

struct CUctx_st *emu_primary(int device) {
	if (primaries[device] == NULL) {
		struct CUctx_st *c = calloc(1, sizeof *c);
		if (c == NULL) {
			abort();
		}
		emu_register(&c->obj, OBJ_CTX);
		c->device = device;
		primaries[device] = c;
	}
	return primaries[device];
}

// ---- allocations ----

static emu_alloc *allocs; // sorted by base (bases only grow)
static size_t nallocs, capallocs;
static CUdeviceptr next_addr = EMU_ADDR_BASE;

int emu_fake(uintptr_t p) { return p >= EMU_ADDR_BASE && p < EMU_ADDR_END; }

CUresult emu_alloc_new(struct CUctx_st *c, size_t n, CUdeviceptr *out) {
	if (n > emu_cfg.total_memory - emu_live_bytes(c->device)) {
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	// 4 KiB aligned (cuMemAlloc promises 256 bytes), then a 64 KiB gap,
	// and never reused: a stale or overrunning address hits no allocation.
	size_t span = ((n + 4095) & ~(size_t)4095) + 65536;
	if (next_addr + span > EMU_ADDR_END || next_addr + span < next_addr) {
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	unsigned char *h = malloc(n);
	if (h == NULL) {
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	memset(h, 0xff, n); // fresh memory reads as NaN
	if (nallocs == capallocs) {
		size_t cap = capallocs ? 2 * capallocs : 64;
		emu_alloc *a = realloc(allocs, cap * sizeof *a);
		if (a == NULL) {
			free(h);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		allocs = a;
		capallocs = cap;
	}
	emu_alloc *a = &allocs[nallocs++];
	a->base = next_addr;
	a->size = n;
	a->host = h;
	a->ctx = c;
	a->id = next_id++;
	next_addr += span;
	*out = a->base;
	return CUDA_SUCCESS;
}

// before returns the live allocation with the highest base <= p, or NULL.
static emu_alloc *before(CUdeviceptr p) {
	size_t lo = 0, hi = nallocs; // the first allocation whose base > p
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (allocs[mid].base <= p) {
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	return lo == 0 ? NULL : &allocs[lo - 1];
}

emu_alloc *emu_find(CUdeviceptr p) {
	emu_alloc *a = before(p);
	return a != NULL && p - a->base < a->size ? a : NULL;
}

emu_alloc *emu_find_base(CUdeviceptr p) {
	emu_alloc *a = emu_find(p);
	return a != NULL && a->base == p ? a : NULL;
}

void emu_alloc_free(emu_alloc *a) {
	free(a->host);
	size_t i = (size_t)(a - allocs);
	memmove(&allocs[i], &allocs[i + 1], (nallocs - i - 1) * sizeof *allocs);
	nallocs--;
}

size_t emu_live_bytes(int device) {
	size_t n = 0;
	for (size_t i = 0; i < nallocs; i++) {
		if (allocs[i].ctx->device == device) {
			n += allocs[i].size;
		}
	}
	return n;
}

void *emu_range(struct CUctx_st *c, CUdeviceptr p, size_t n) {
	emu_alloc *a = emu_find(p);
	if (a == NULL || (c != NULL && a->ctx != c)) {
		return NULL;
	}
	if (n > a->size - (p - a->base)) {
		return NULL;
	}
	return a->host + (p - a->base);
}

void emu_describe(CUdeviceptr p, size_t n, char *buf, size_t len) {
	emu_alloc *a = emu_find(p);
	if (a != NULL) {
		snprintf(buf, len, "%zu bytes at %#llx: starts %llu bytes into an allocation of %zu bytes at %#llx and runs %llu bytes past its end",
		         n, (unsigned long long)p, (unsigned long long)(p - a->base), a->size, (unsigned long long)a->base,
		         (unsigned long long)(p + n - (a->base + a->size)));
	} else if (p == 0) {
		snprintf(buf, len, "%zu bytes at address 0 (NULL)", n);
	} else if ((a = before(p)) != NULL && p - (a->base + a->size) < 65536) {
		snprintf(buf, len, "%zu bytes at %#llx: %llu bytes past the end of an allocation of %zu bytes at %#llx", n, (unsigned long long)p,
		         (unsigned long long)(p - (a->base + a->size)), a->size, (unsigned long long)a->base);
	} else if (!emu_fake(p)) {
		snprintf(buf, len, "%zu bytes at %#llx: not a device address (a host pointer?)", n, (unsigned long long)p);
	} else {
		snprintf(buf, len, "%zu bytes at %#llx: in no live allocation (freed, or never allocated)", n, (unsigned long long)p);
	}
}

size_t emu_vec_extent(int n, int inc) {
	if (n <= 0) {
		return 0;
	}
	long long s = inc < 0 ? -(long long)inc : inc;
	return (size_t)((long long)(n - 1) * s + 1);
}

size_t emu_mat_extent(int rows, int cols, int ld) {
	if (rows <= 0 || cols <= 0) {
		return 0;
	}
	return (size_t)((long long)(cols - 1) * ld + rows);
}

// ---- streams ----

struct CUstream_st *emu_stream_new(struct CUctx_st *c, unsigned flags, int legacy) {
	struct CUstream_st *s = calloc(1, sizeof *s);
	if (s == NULL) {
		return NULL;
	}
	emu_register(&s->obj, OBJ_STREAM);
	s->ctx = c;
	s->flags = flags;
	s->legacy = legacy;
	return s;
}

CUresult emu_stream(const char *fn, struct CUctx_st *c, CUstream h, struct CUstream_st **out) {
	if (h == NULL || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) {
		if (c->null_stream == NULL) {
			c->null_stream = emu_stream_new(c, 0, 1);
			if (c->null_stream == NULL) {
				return CUDA_ERROR_OUT_OF_MEMORY;
			}
		}
		*out = c->null_stream;
		return CUDA_SUCCESS;
	}
	if (!emu_valid(h, OBJ_STREAM)) {
		emu_report(fn, "stream %p is not a live stream (destroyed, or never created): CUDA_ERROR_INVALID_HANDLE", (void *)h);
		return CUDA_ERROR_INVALID_HANDLE;
	}
	if (h->ctx != c) {
		emu_report(fn, "stream %p belongs to another context than the current one: CUDA_ERROR_INVALID_HANDLE", (void *)h);
		return CUDA_ERROR_INVALID_HANDLE;
	}
	*out = h;
	return CUDA_SUCCESS;
}

static uint64_t next_seq = 1;

static void push_op(struct CUstream_st *s, emu_op *op) {
	if (s->len == s->cap) {
		// Compact first, then grow.
		if (s->head > 0) {
			memmove(s->q, s->q + s->head, (s->len - s->head) * sizeof *s->q);
			s->len -= s->head;
			s->head = 0;
		}
		if (s->len == s->cap) {
			size_t cap = s->cap ? 2 * s->cap : 16;
			emu_op *q = realloc(s->q, cap * sizeof *q);
			if (q == NULL) {
				abort();
			}
			s->q = q;
			s->cap = cap;
		}
	}
	op->seq = next_seq++;
	s->q[s->len++] = *op;
	s->last_seq = op->seq;
}

static int pending(struct CUstream_st *s) { return s != NULL && s->head < s->len; }

// The legacy stream's ordering: its work waits for what the blocking
// streams queued before it, and theirs for what it queued before them.
void emu_enqueue(struct CUstream_st *s, emu_op *op) {
	struct CUctx_st *c = s->ctx;
	op->ctx = c;
	if (s->legacy) {
		for (emu_obj *o = objects; o != NULL; o = o->next) {
			struct CUstream_st *b = (struct CUstream_st *)o;
			if (o->kind == OBJ_STREAM && o->alive && b->ctx == c && !b->legacy &&
			    !(b->flags & CU_STREAM_NON_BLOCKING) && pending(b)) {
				emu_op w = {.kind = OP_WAIT, .fn = "(legacy stream order)", .wait = b, .wait_seq = b->last_seq};
				push_op(s, &w);
			}
		}
	} else if (!(s->flags & CU_STREAM_NON_BLOCKING) && pending(c->null_stream)) {
		emu_op w = {.kind = OP_WAIT, .fn = "(legacy stream order)", .wait = c->null_stream, .wait_seq = c->null_stream->last_seq};
		push_op(s, &w);
	}
	push_op(s, op);
}

static void drop_all(struct CUctx_st *c) {
	for (emu_obj *o = objects; o != NULL; o = o->next) {
		struct CUstream_st *s = (struct CUstream_st *)o;
		if (o->kind == OBJ_STREAM && s->ctx == c) {
			s->head = s->len = 0;
			s->done_seq = s->last_seq;
		}
	}
}

static CUresult vfault(struct CUctx_st *c, CUresult code, const char *fn, const char *fmt, va_list ap) {
	char buf[768];
	vsnprintf(buf, sizeof buf, fmt, ap);
	c->sticky = code;
	drop_all(c);
	const char *name = emu_cu_name(code);
	emu_report(fn, "%s: %s; the context's error is now sticky: every later call returns %s (%d)",
	           code == CUDA_ERROR_ILLEGAL_ADDRESS ? "ILLEGAL ADDRESS" : "KERNEL FAULT", buf, name ? name : "?", (int)code);
	return code;
}

CUresult emu_fault(struct CUctx_st *c, const char *fn, const char *fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	CUresult r = vfault(c, CUDA_ERROR_ILLEGAL_ADDRESS, fn, fmt, ap);
	va_end(ap);
	return r;
}

CUresult emu_fault_as(struct CUctx_st *c, CUresult code, const char *fn, const char *fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	CUresult r = vfault(c, code, fn, fmt, ap);
	va_end(ap);
	return r;
}

void *emu_operand(struct CUctx_st *c, emu_op *op, const char *what, CUdeviceptr p, size_t elems, size_t size) {
	static double none;
	if (elems == 0) {
		return &none; // an empty operand touches no memory
	}
	size_t n = elems * size;
	void *h = emu_range(c, p, n);
	if (h == NULL) {
		char d[512];
		emu_describe(p, n, d, sizeof d);
		emu_fault(c, op->fn, "operand %s, %zu values of %zu bytes: %s", what, elems, size, d);
	}
	return h;
}

static CUresult exec_op(struct CUstream_st *s, emu_op *op) {
	struct CUctx_st *c = s->ctx;
	void *d, *src;
	switch (op->kind) {
	case OP_HTOD:
		if ((d = emu_operand(c, op, "destination", op->dst, op->n, 1)) == NULL) {
			return c->sticky;
		}
		memcpy(d, op->host, op->n); // the host memory is read now, not when queued
		return CUDA_SUCCESS;
	case OP_DTOH:
		if ((src = emu_operand(c, op, "source", op->src, op->n, 1)) == NULL) {
			return c->sticky;
		}
		memcpy(op->host, src, op->n); // and written now
		return CUDA_SUCCESS;
	case OP_DTOD:
		if ((d = emu_operand(c, op, "destination", op->dst, op->n, 1)) == NULL ||
		    (src = emu_operand(c, op, "source", op->src, op->n, 1)) == NULL) {
			return c->sticky;
		}
		memmove(d, src, op->n);
		return CUDA_SUCCESS;
	case OP_MEMSET:
		if ((d = emu_operand(c, op, "destination", op->dst, op->n, 1)) == NULL) {
			return c->sticky;
		}
		memset(d, op->byte, op->n);
		return CUDA_SUCCESS;
	case OP_RECORD:
		if (emu_known(op->event, OBJ_EVENT) && op->event->done_gen < op->gen) {
			op->event->done_gen = op->gen;
			op->event->t_ns = emu_now_ns();
		}
		return CUDA_SUCCESS;
	case OP_WAIT:
		if (emu_known(op->wait, OBJ_STREAM)) {
			return emu_run(op->wait, op->wait_seq);
		}
		return CUDA_SUCCESS;
	case OP_KERNEL:
		return op->run(op);
	}
	return CUDA_SUCCESS;
}

CUresult emu_run(struct CUstream_st *s, uint64_t upto) {
	struct CUctx_st *c = s->ctx;
	while (c->sticky == CUDA_SUCCESS && s->head < s->len && s->q[s->head].seq <= upto) {
		emu_op op = s->q[s->head++];
		if (s->head == s->len) {
			s->head = s->len = 0;
		}
		CUresult r = exec_op(s, &op);
		if (c->sticky == CUDA_SUCCESS) {
			s->done_seq = op.seq;
		}
		if (r != CUDA_SUCCESS) {
			break;
		}
	}
	return c->sticky;
}

CUresult emu_sync_ctx(struct CUctx_st *c, int legacy_only) {
	for (emu_obj *o = objects; o != NULL && c->sticky == CUDA_SUCCESS; o = o->next) {
		struct CUstream_st *s = (struct CUstream_st *)o;
		if (o->kind == OBJ_STREAM && s->ctx == c && (!legacy_only || s->legacy || !(s->flags & CU_STREAM_NON_BLOCKING))) {
			emu_run(s, UINT64_MAX);
		}
	}
	return c->sticky;
}

// emu_ctx_destroy ends a primary context once nothing holds it: its
// memory is freed, its streams, events and library handles die, and its
// sticky error is cleared (a later retain gets a fresh context).
void emu_ctx_destroy(struct CUctx_st *c) {
	drop_all(c);
	for (size_t i = 0; i < nallocs;) {
		if (allocs[i].ctx == c) {
			emu_alloc_free(&allocs[i]);
		} else {
			i++;
		}
	}
	for (emu_obj *o = objects; o != NULL; o = o->next) {
		struct CUctx_st *oc = NULL;
		switch (o->kind) {
		case OBJ_STREAM:
			oc = ((struct CUstream_st *)o)->ctx;
			break;
		case OBJ_EVENT:
			oc = ((struct CUevent_st *)o)->ctx;
			break;
		case OBJ_BLAS:
			oc = ((struct cublasContext *)o)->ctx;
			break;
		case OBJ_SOLVER:
			oc = ((struct cusolverDnContext *)o)->ctx;
			break;
		case OBJ_MODULE:
			oc = ((struct CUmod_st *)o)->ctx;
			break;
		}
		if (oc == c) {
			o->alive = 0;
		}
	}
	c->null_stream = NULL;
	c->active = 0;
	c->sticky = CUDA_SUCCESS;
}
