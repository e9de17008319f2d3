//go:build cuda

package cuda

/*
#cgo CFLAGS: -I${SRCDIR}/../../../.cache/cuda/include -I/usr/local/cuda/include
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "calls.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"
)

// Libraries lists the shared libraries Open looks for with a driver that
// supports CUDA driverVersion (as DriverVersion reports it; 0 when
// unknown), each as the sonames tried in order: the driver's libcuda,
// cuBLAS, cuSOLVER, and the runtime the tests use. A CUDA 13 driver (or an
// unknown one) gets CUDA 13's libraries first, then CUDA 12's; a CUDA 12
// driver only CUDA 12's, since it cannot run CUDA 13's.
func Libraries(driverVersion int) [][]string {
	out := make([][]string, 4)
	for i := range out {
		for _, s := range unsafe.Slice(C.rc_library_names(C.int(i), C.int(driverVersion)), 8) {
			if s == nil {
				break
			}
			out[i] = append(out[i], C.GoString(s))
		}
	}
	return out
}

// loaded records the outcome of loading the libraries, done once.
var loaded struct {
	once sync.Once
	err  error
}

// load opens the libraries and resolves every function, once.
func load() error {
	loaded.once.Do(func() {
		var why [512]C.char
		if C.rc_open(&why[0], C.size_t(len(why))) != 0 {
			loaded.err = fmt.Errorf("loading the CUDA libraries: %s", C.GoString(&why[0]))
		}
	})
	return loaded.err
}

// ErrNoDevice is wrapped by Open's error when the driver works but reports
// no device.
var ErrNoDevice = errors.New("no CUDA device")

// Open loads the libraries, initialises the driver and opens device
// ordinal (0 for the first GPU): its primary context, a stream, and a
// cuBLAS and a cuSOLVER handle on that stream. Its error says what is
// missing: a library (not installed, or not on the library path), the
// driver (cuInit fails: no driver, or a stub), a device.
func Open(ordinal int) (*Device, error) {
	if err := load(); err != nil {
		return nil, err
	}
	if err := check("cuInit", C.rc_cuInit(0)); err != nil {
		if ce := err.(*Error); ce.Code == C.CUDA_ERROR_NO_DEVICE {
			// A driver with no visible GPU fails here, not later.
			return nil, fmt.Errorf("%w: %w", ErrNoDevice, err)
		}
		return nil, err
	}
	return openDevice(ordinal)
}

// DriverVersion returns the CUDA version the driver supports, as
// 1000·major + 10·minor (13000 for CUDA 13.0).
func DriverVersion() (int, error) {
	if err := load(); err != nil {
		return 0, err
	}
	var v C.int
	if err := check("cuDriverGetVersion", C.rc_cuDriverGetVersion(&v)); err != nil {
		return 0, err
	}
	return int(v), nil
}

// runtimeLoaded records the outcome of loading the CUDA runtime, done once.
var runtimeLoaded struct {
	once sync.Once
	err  error
}

// loadRuntime opens the CUDA runtime (libcudart) after the other
// libraries, once.
func loadRuntime() error {
	if err := load(); err != nil {
		return err
	}
	runtimeLoaded.once.Do(func() {
		var why [512]C.char
		if C.rc_open_runtime(&why[0], C.size_t(len(why))) != 0 {
			runtimeLoaded.err = fmt.Errorf("loading the CUDA runtime: %s", C.GoString(&why[0]))
		}
	})
	return runtimeLoaded.err
}
