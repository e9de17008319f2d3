//go:build cuda

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "shim.h"

rc_api rc;

// The sonames, newest first. A driver runs the libraries of its own CUDA
// major version and older ones, never newer: with a CUDA 12 driver,
// libcublas.so.13 loads but fails at its first call, so it is not tried.
static const char *rc_driver_names[] = {"libcuda.so.1", "libcuda.so", NULL};
static const char *rc_blas13_names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so", NULL};
static const char *rc_blas12_names[] = {"libcublas.so.12", "libcublas.so", NULL};
static const char *rc_solver13_names[] = {"libcusolver.so.12", "libcusolver.so.11", "libcusolver.so", NULL};
static const char *rc_solver12_names[] = {"libcusolver.so.11", "libcusolver.so", NULL};
static const char *rc_runtime13_names[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so", NULL};
static const char *rc_runtime12_names[] = {"libcudart.so.12", "libcudart.so", NULL};

const char **rc_library_names(int which, int driver_version) {
	int cuda12 = driver_version > 0 && driver_version < 13000;
	switch (which) {
	case 0:
		return rc_driver_names;
	case 1:
		return cuda12 ? rc_blas12_names : rc_blas13_names;
	case 2:
		return cuda12 ? rc_solver12_names : rc_solver13_names;
	default:
		return cuda12 ? rc_runtime12_names : rc_runtime13_names;
	}
}

// rc_driver_version is what the driver reported before the other
// libraries were chosen (0 when it could not say).
static int rc_driver_version;

// rc_str turns a name into a string after macro expansion: the symbol.
#define rc_str_(x) #x
#define rc_str(x) rc_str_(x)

// open_one opens the first library of names that loads, or says why none did.
static void *open_one(const char **names, char *why, size_t why_len) {
	const char *first_error = NULL;
	char first[512] = "";
	for (int i = 0; names[i] != NULL; i++) {
		void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
		if (h != NULL) {
			return h;
		}
		if (first_error == NULL) {
			first_error = dlerror();
			if (first_error != NULL) {
				snprintf(first, sizeof first, "%s", first_error);
			}
		}
	}
	snprintf(why, why_len, "%s", first[0] ? first : names[0]);
	return NULL;
}

int rc_open(char *why, size_t why_len) {
	void *driver = open_one(rc_driver_names, why, why_len);
	if (driver == NULL) {
		return -1;
	}
	// The driver's version chooses the other libraries; it needs no
	// cuInit. A stub driver answers an error: CUDA 13's order then.
	__typeof__(&cuDriverGetVersion) version = (__typeof__(&cuDriverGetVersion))dlsym(driver, "cuDriverGetVersion");
	if (version == NULL || version(&rc_driver_version) != CUDA_SUCCESS) {
		rc_driver_version = 0;
	}
	void *blas = open_one(rc_library_names(1, rc_driver_version), why, why_len);
	if (blas == NULL) {
		return -1;
	}
	void *solver = open_one(rc_library_names(2, rc_driver_version), why, why_len);
	if (solver == NULL) {
		return -1;
	}
#define RC_RESOLVE(lib, name)                                                          \
	rc.name = (__typeof__(&name))dlsym(lib, rc_str(name));                         \
	if (rc.name == NULL) {                                                         \
		snprintf(why, why_len, "%s lacks %s", rc_str(lib) " library", rc_str(name)); \
		return -1;                                                             \
	}
	RC_FUNCTIONS(RC_RESOLVE)
#undef RC_RESOLVE
#define RC_RESOLVE_OPTIONAL(lib, name) rc.name = (__typeof__(&name))dlsym(lib, rc_str(name));
	RC_OPTIONAL(RC_RESOLVE_OPTIONAL)
#undef RC_RESOLVE_OPTIONAL
	return 0;
}

int rc_has_events(void) {
#define RC_HAS(lib, name) if (rc.name == NULL) return 0;
	RC_OPTIONAL(RC_HAS)
#undef RC_HAS
	return 1;
}

int rc_open_runtime(char *why, size_t why_len) {
	void *runtime = open_one(rc_library_names(3, rc_driver_version), why, why_len);
	if (runtime == NULL) {
		return -1;
	}
#define RC_RESOLVE(lib, name)                                                   \
	rc.name = (__typeof__(&name))dlsym(lib, rc_str(name));                  \
	if (rc.name == NULL) {                                                  \
		snprintf(why, why_len, "the runtime library lacks %s", rc_str(name)); \
		return -1;                                                      \
	}
	RC_RUNTIME(RC_RESOLVE)
#undef RC_RESOLVE
	return 0;
}

const char *rc_solver_status_name(cusolverStatus_t s) {
#define RC_NAME(x) \
	case x:    \
		return #x;
	switch (s) {
		RC_NAME(CUSOLVER_STATUS_SUCCESS)
		RC_NAME(CUSOLVER_STATUS_NOT_INITIALIZED)
		RC_NAME(CUSOLVER_STATUS_ALLOC_FAILED)
		RC_NAME(CUSOLVER_STATUS_INVALID_VALUE)
		RC_NAME(CUSOLVER_STATUS_ARCH_MISMATCH)
		RC_NAME(CUSOLVER_STATUS_MAPPING_ERROR)
		RC_NAME(CUSOLVER_STATUS_EXECUTION_FAILED)
		RC_NAME(CUSOLVER_STATUS_INTERNAL_ERROR)
		RC_NAME(CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED)
		RC_NAME(CUSOLVER_STATUS_NOT_SUPPORTED)
		RC_NAME(CUSOLVER_STATUS_ZERO_PIVOT)
		RC_NAME(CUSOLVER_STATUS_INVALID_LICENSE)
		RC_NAME(CUSOLVER_STATUS_INVALID_WORKSPACE)
	default:
		return NULL;
	}
#undef RC_NAME
}
