//go:build cuda

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "shim.h"

rc_api rc;

static const char *rc_driver_names[] = {"libcuda.so.1", "libcuda.so", NULL};
static const char *rc_blas_names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so", NULL};
static const char *rc_solver_names[] = {"libcusolver.so.12", "libcusolver.so.11", "libcusolver.so", NULL};

const char **rc_library_names(int which) {
	switch (which) {
	case 0:
		return rc_driver_names;
	case 1:
		return rc_blas_names;
	default:
		return rc_solver_names;
	}
}

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
	void *blas = open_one(rc_blas_names, why, why_len);
	if (blas == NULL) {
		return -1;
	}
	void *solver = open_one(rc_solver_names, why, why_len);
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
