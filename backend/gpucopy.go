package main

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stddef.h>

// The CUDA runtime functions a CPU backend needs to read an input that
// Triton hands over in GPU memory, loaded on first use from the CUDA
// runtime already in the process (Triton's GPU build links it). Their
// signatures and the value of cudaMemcpyDeviceToHost (2) are the CUDA
// runtime API's.
typedef int (*cuda_set_device_fn)(int device);
typedef int (*cuda_get_device_fn)(int *device);
typedef int (*cuda_memcpy_fn)(void *dst, const void *src, size_t count, int kind);

static cuda_set_device_fn cuda_set_device;
static cuda_get_device_fn cuda_get_device;
static cuda_memcpy_fn cuda_memcpy;

// cuda_load binds the functions; it returns NULL, or why it could not.
static const char *cuda_load(void) {
	static const char *names[] = {"libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", NULL};
	void *lib = NULL;
	for (int i = 0; names[i] != NULL && lib == NULL; i++) {
		lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	}
	if (lib == NULL) {
		return "no CUDA runtime (libcudart.so) in this process";
	}
	cuda_set_device = (cuda_set_device_fn)dlsym(lib, "cudaSetDevice");
	cuda_get_device = (cuda_get_device_fn)dlsym(lib, "cudaGetDevice");
	cuda_memcpy = (cuda_memcpy_fn)dlsym(lib, "cudaMemcpy");
	if (cuda_set_device == NULL || cuda_get_device == NULL || cuda_memcpy == NULL) {
		return "the CUDA runtime lacks cudaSetDevice, cudaGetDevice or cudaMemcpy";
	}
	return NULL;
}

// cuda_copy copies n bytes with cudaMemcpy of kind (2: device to host, 1:
// host to device) with device current, then makes the thread's device
// what it was: the thread is Triton's, and its other work expects its own
// device. It returns the CUDA error code (0 for success).
static int cuda_copy(void *dst, const void *src, size_t n, int kind, int device) {
	int prev = 0;
	int err = cuda_get_device(&prev);
	if (err != 0) {
		return err;
	}
	if ((err = cuda_set_device(device)) != 0) {
		return err;
	}
	err = cuda_memcpy(dst, src, n, kind);
	int restore = cuda_set_device(prev);
	return err != 0 ? err : restore;
}

// cuda_to_host copies n bytes from device memory to host memory.
static int cuda_to_host(void *dst, const void *src, size_t n, int device) { return cuda_copy(dst, src, n, 2, device); }

// cuda_to_device copies n bytes from host memory to device memory.
static int cuda_to_device(void *dst, const void *src, size_t n, int device) { return cuda_copy(dst, src, n, 1, device); }
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"
)

// cuda is the CUDA runtime, bound on first use.
var cuda struct {
	once sync.Once
	err  error
}

// loadCUDA binds the CUDA runtime once; it returns why it cannot.
func loadCUDA(what string) error {
	cuda.once.Do(func() {
		if why := C.cuda_load(); why != nil {
			cuda.err = fmt.Errorf("%s: %s; run the react model's producer on the CPU, or use a GPU build of Triton", what, C.GoString(why))
		}
	})
	return cuda.err
}

// copyToGPU copies src to dst in the memory of GPU device, as the output
// of a correction made on another device.
func copyToGPU(dst unsafe.Pointer, src []byte, device int64) error {
	if err := loadCUDA("the output is in GPU memory"); err != nil {
		return err
	}
	if len(src) == 0 {
		return nil
	}
	if code := C.cuda_to_device(dst, unsafe.Pointer(&src[0]), C.size_t(len(src)), C.int(device)); code != 0 {
		return fmt.Errorf("copying the output to GPU %d: CUDA error %d", device, int(code))
	}
	return nil
}

// copyFromGPU appends n bytes at src in the memory of GPU device to dst,
// as a CPU backend does with an input Triton hands over in GPU memory. It
// needs the CUDA runtime in the process, which Triton's GPU build has.
func copyFromGPU(dst []byte, src unsafe.Pointer, n int, device int64) ([]byte, error) {
	if err := loadCUDA("the input is in GPU memory"); err != nil {
		return dst, err
	}
	start := len(dst)
	dst = append(dst, make([]byte, n)...)
	if n == 0 {
		return dst, nil
	}
	if code := C.cuda_to_host(unsafe.Pointer(&dst[start]), src, C.size_t(n), C.int(device)); code != 0 {
		return dst[:start], fmt.Errorf("copying the input from GPU %d: CUDA error %d", device, int(code))
	}
	return dst, nil
}
