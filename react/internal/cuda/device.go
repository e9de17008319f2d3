//go:build cuda

package cuda

/*
#include "calls.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

// Device is one GPU with its primary context and two lanes of work, main
// and aux, each a stream with a cuBLAS and a cuSOLVER handle bound to it:
// work on the two runs concurrently (OnAux). Do is safe for concurrent
// use: it runs under the device's mutex, with the context current on a
// locked OS thread, and returns once both streams are idle, so that host
// memory passed in is no longer read or written.
type Device struct {
	mu      sync.Mutex
	ordinal int
	dev     C.CUdevice
	ctx     C.CUcontext
	lanes   [2]lane // main, aux
	cur     *lane   // where the methods queue work: main, or aux in OnAux
	fence   C.CUevent
	name    string
	kern    kernels
	// pins keeps the host memory of the asynchronous copies queued in
	// the current Do in place and alive until the stream has finished
	// with it (cgo lets C keep a Go pointer past a call only if pinned).
	pins runtime.Pinner
}

// lane is a stream and the library handles bound to it.
type lane struct {
	stream C.CUstream
	blas   C.cublasHandle_t
	solver C.cusolverDnHandle_t
}

// open creates the lane's stream and handles. Call it inside Do.
func (l *lane) open() error {
	if err := check("cuStreamCreate", C.rc_cuStreamCreate(&l.stream, C.CU_STREAM_NON_BLOCKING)); err != nil {
		return err
	}
	if err := checkBLAS("cublasCreate", C.rc_cublasCreate(&l.blas)); err != nil {
		return err
	}
	if err := checkBLAS("cublasSetStream", C.rc_cublasSetStream(l.blas, l.stream)); err != nil {
		return err
	}
	// Stated, not left to cuBLAS: SGEMM in float32, no TF32 (whose 10-bit
	// mantissa would break the correction's tolerance).
	if err := checkBLAS("cublasSetMathMode", C.rc_cublasSetMathMode(l.blas, C.CUBLAS_DEFAULT_MATH)); err != nil {
		return err
	}
	if err := checkSolver("cusolverDnCreate", C.rc_cusolverDnCreate(&l.solver)); err != nil {
		return err
	}
	return checkSolver("cusolverDnSetStream", C.rc_cusolverDnSetStream(l.solver, l.stream))
}

// close destroys what open created. Call it inside Do.
func (l *lane) close() {
	if l.solver != nil {
		C.rc_cusolverDnDestroy(l.solver)
		l.solver = nil
	}
	if l.blas != nil {
		C.rc_cublasDestroy(l.blas)
		l.blas = nil
	}
	if l.stream != nil {
		C.rc_cuStreamDestroy(l.stream)
		l.stream = nil
	}
}

func openDevice(ordinal int) (*Device, error) {
	var n C.int
	if err := check("cuDeviceGetCount", C.rc_cuDeviceGetCount(&n)); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, ErrNoDevice
	}
	if ordinal < 0 || ordinal >= int(n) {
		return nil, fmt.Errorf("CUDA device %d: %w (this machine has %d)", ordinal, ErrNoDevice, int(n))
	}
	d := &Device{ordinal: ordinal}
	if err := check("cuDeviceGet", C.rc_cuDeviceGet(&d.dev, C.int(ordinal))); err != nil {
		return nil, err
	}
	var name [256]C.char
	if err := check("cuDeviceGetName", C.rc_cuDeviceGetName(&name[0], C.int(len(name)), d.dev)); err != nil {
		return nil, err
	}
	d.name = C.GoString(&name[0])
	if err := check("cuDevicePrimaryCtxRetain", C.rc_cuDevicePrimaryCtxRetain(&d.ctx, d.dev)); err != nil {
		return nil, err
	}
	d.cur = &d.lanes[0]
	err := d.Do(func() error {
		for i := range d.lanes {
			if err := d.lanes[i].open(); err != nil {
				return err
			}
		}
		if err := check("cuEventCreate", C.rc_cuEventCreate(&d.fence, C.CU_EVENT_DISABLE_TIMING)); err != nil {
			return err
		}
		return d.loadKernels()
	})
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("CUDA device %d (%s): %w", ordinal, d.name, err)
	}
	return d, nil
}

// Name returns the device's name and ordinal, such as "NVIDIA H100 80GB
// HBM3 (device 0)".
func (d *Device) Name() string { return fmt.Sprintf("%s (device %d)", d.name, d.ordinal) }

// Close releases the handles, the stream and the primary context.
func (d *Device) Close() error {
	err := d.Do(func() error {
		d.unloadKernels()
		if d.fence != nil {
			C.rc_cuEventDestroy(d.fence)
			d.fence = nil
		}
		for i := range d.lanes {
			d.lanes[i].close()
		}
		return nil
	})
	if d.ctx != nil {
		C.rc_cuDevicePrimaryCtxRelease(d.dev)
		d.ctx = nil
	}
	return err
}

// Do runs f with the device's context current on this OS thread, under
// the device's mutex, then waits for the stream to finish what f queued.
func (d *Device) Do(f func() error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := check("cuCtxPushCurrent", C.rc_cuCtxPushCurrent(d.ctx)); err != nil {
		return err
	}
	defer func() {
		var old C.CUcontext
		C.rc_cuCtxPopCurrent(&old)
	}()
	d.cur = &d.lanes[0]
	err := f()
	d.cur = &d.lanes[0]
	for _, l := range d.lanes {
		if l.stream == nil {
			continue
		}
		if serr := check("cuStreamSynchronize", C.rc_cuStreamSynchronize(l.stream)); err == nil {
			err = serr
		}
	}
	// The stream is idle (or failed for good): its copies are done with
	// the host memory.
	d.pins.Unpin()
	return err
}

// pin keeps p's object in place and alive until the end of the current Do,
// for an asynchronous copy that reads or writes it.
func (d *Device) pin(p unsafe.Pointer) { d.pins.Pin(p) }

// Sync waits until the current lane's stream has finished what was
// queued. Call it inside Do.
func (d *Device) Sync() error {
	return check("cuStreamSynchronize", C.rc_cuStreamSynchronize(d.cur.stream))
}

// OnAux runs f with the methods queueing work on the aux lane, which the
// GPU runs concurrently with what is queued on main: f's host loop (and
// its Syncs, which wait for aux only) overlaps main's work. The two must
// not write memory the other reads; AuxWaitsMain orders them. Call it
// inside Do.
func (d *Device) OnAux(f func() error) error {
	d.cur = &d.lanes[1]
	defer func() { d.cur = &d.lanes[0] }()
	return f()
}

// AuxWaitsMain makes the work queued on aux from now on wait for what has
// been queued on main so far. Call it inside Do, outside OnAux.
func (d *Device) AuxWaitsMain() error {
	if err := check("cuEventRecord", C.rc_cuEventRecord(d.fence, d.lanes[0].stream)); err != nil {
		return err
	}
	return check("cuStreamWaitEvent", C.rc_cuStreamWaitEvent(d.lanes[1].stream, d.fence, 0))
}

// Ptr is an address in the device's memory.
type Ptr uintptr

// Add returns the address n bytes further.
func (p Ptr) Add(n int) Ptr { return p + Ptr(n) }

func (p Ptr) c() C.CUdeviceptr { return C.CUdeviceptr(p) }

// Alloc allocates n bytes of device memory (cuMemAlloc: plain device
// memory, never managed). Call it inside Do.
func (d *Device) Alloc(n int) (Ptr, error) {
	var p C.CUdeviceptr
	if err := check("cuMemAlloc", C.rc_cuMemAlloc(&p, C.size_t(max(n, 1)))); err != nil {
		return 0, fmt.Errorf("allocating %d bytes: %w", n, err)
	}
	return Ptr(p), nil
}

// Free frees memory from Alloc; it takes the device's mutex itself, so
// that it can run from a cleanup. Inside Do, call FreeLocked.
func (d *Device) Free(p Ptr) {
	if p == 0 {
		return
	}
	_ = d.Do(func() error { d.FreeLocked(p); return nil })
}

// FreeLocked frees memory from Alloc. Call it inside Do.
func (d *Device) FreeLocked(p Ptr) {
	if p != 0 {
		C.rc_cuMemFree(p.c())
	}
}

// Zero queues setting n bytes at p to zero. Call it inside Do.
func (d *Device) Zero(p Ptr, n int) error {
	return check("cuMemsetD8Async", C.rc_cuMemsetD8Async(p.c(), 0, C.size_t(n), d.cur.stream))
}

// Memset queues setting n bytes at p to b. Call it inside Do.
func (d *Device) Memset(p Ptr, b byte, n int) error {
	return check("cuMemsetD8Async", C.rc_cuMemsetD8Async(p.c(), C.uchar(b), C.size_t(n), d.cur.stream))
}

// CopyDtoD queues copying n bytes between device addresses. Call it inside
// Do.
func (d *Device) CopyDtoD(dst, src Ptr, n int) error {
	return check("cuMemcpyDtoDAsync", C.rc_cuMemcpyDtoDAsync(dst.c(), src.c(), C.size_t(n), d.cur.stream))
}

// Upload64 copies src to the device at dst. Call it inside Do; src must
// not change until Do returns.
func (d *Device) Upload64(dst Ptr, src []float64) error {
	if len(src) == 0 {
		return nil
	}
	d.pin(unsafe.Pointer(&src[0]))
	return check("cuMemcpyHtoDAsync", C.rc_cuMemcpyHtoDAsync(dst.c(), unsafe.Pointer(&src[0]), C.size_t(8*len(src)), d.cur.stream))
}

// Upload32 copies src to the device at dst, as Upload64.
func (d *Device) Upload32(dst Ptr, src []float32) error {
	if len(src) == 0 {
		return nil
	}
	d.pin(unsafe.Pointer(&src[0]))
	return check("cuMemcpyHtoDAsync", C.rc_cuMemcpyHtoDAsync(dst.c(), unsafe.Pointer(&src[0]), C.size_t(4*len(src)), d.cur.stream))
}

// Download64 copies len(dst) values from the device at src into dst. Call
// it inside Do; dst holds them once Do returns.
func (d *Device) Download64(dst []float64, src Ptr) error {
	if len(dst) == 0 {
		return nil
	}
	d.pin(unsafe.Pointer(&dst[0]))
	return check("cuMemcpyDtoHAsync", C.rc_cuMemcpyDtoHAsync(unsafe.Pointer(&dst[0]), src.c(), C.size_t(8*len(dst)), d.cur.stream))
}

// Download32 copies len(dst) values from the device at src, as Download64.
func (d *Device) Download32(dst []float32, src Ptr) error {
	if len(dst) == 0 {
		return nil
	}
	d.pin(unsafe.Pointer(&dst[0]))
	return check("cuMemcpyDtoHAsync", C.rc_cuMemcpyDtoHAsync(unsafe.Pointer(&dst[0]), src.c(), C.size_t(4*len(dst)), d.cur.stream))
}

// DownloadBytes copies len(dst) bytes from the device at src, as
// Download64.
func (d *Device) DownloadBytes(dst []byte, src Ptr) error {
	if len(dst) == 0 {
		return nil
	}
	d.pin(unsafe.Pointer(&dst[0]))
	return check("cuMemcpyDtoHAsync", C.rc_cuMemcpyDtoHAsync(unsafe.Pointer(&dst[0]), src.c(), C.size_t(len(dst)), d.cur.stream))
}

// DownloadInt32 copies one int32 from the device (a cuSOLVER info).
func (d *Device) DownloadInt32(src Ptr) (int32, error) {
	v := new(int32)
	d.pin(unsafe.Pointer(v))
	err := check("cuMemcpyDtoHAsync", C.rc_cuMemcpyDtoHAsync(unsafe.Pointer(v), src.c(), 4, d.cur.stream))
	if err == nil {
		err = check("cuStreamSynchronize", C.rc_cuStreamSynchronize(d.cur.stream))
	}
	return *v, err
}

// MemInfo returns the device's free and total memory in bytes, as the
// driver counts them (all processes' allocations). Call it inside Do.
func (d *Device) MemInfo() (free, total int, err error) {
	var f, t C.size_t
	if err := check("cuMemGetInfo", C.rc_cuMemGetInfo(&f, &t)); err != nil {
		return 0, 0, err
	}
	return int(f), int(t), nil
}

// CheckRange checks that the n bytes at p lie in one allocation of this
// device's memory, as an address handed over by another component (a
// Triton input or output buffer) must before a kernel reads or writes it:
// a kernel that touches an address outside every allocation is a sticky
// error that ends every later call in the context, other models' too.
// Memory from cuMemAlloc, cudaMalloc or a pool carved from them passes;
// host memory, another device's, and a range past its allocation's end do
// not. Call it inside Do.
func (d *Device) CheckRange(p Ptr, n int) error {
	if p == 0 {
		return errors.New("device address 0")
	}
	var mtype C.uint
	if err := check("cuPointerGetAttribute", C.rc_cuPointerGetAttribute(unsafe.Pointer(&mtype), C.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p.c())); err != nil {
		return fmt.Errorf("address %#x is not device memory: %w", uintptr(p), err)
	}
	if mtype != C.CU_MEMORYTYPE_DEVICE {
		return fmt.Errorf("address %#x is not device memory (memory type %d)", uintptr(p), int(mtype))
	}
	var ordinal C.int
	if err := check("cuPointerGetAttribute", C.rc_cuPointerGetAttribute(unsafe.Pointer(&ordinal), C.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p.c())); err != nil {
		return fmt.Errorf("address %#x: %w", uintptr(p), err)
	}
	if int(ordinal) != d.ordinal {
		return fmt.Errorf("address %#x is on device %d, not %d", uintptr(p), int(ordinal), d.ordinal)
	}
	var start C.CUdeviceptr
	var size C.size_t
	if err := check("cuPointerGetAttribute", C.rc_cuPointerGetAttribute(unsafe.Pointer(&start), C.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p.c())); err != nil {
		return fmt.Errorf("address %#x: %w", uintptr(p), err)
	}
	if err := check("cuPointerGetAttribute", C.rc_cuPointerGetAttribute(unsafe.Pointer(&size), C.CU_POINTER_ATTRIBUTE_RANGE_SIZE, p.c())); err != nil {
		return fmt.Errorf("address %#x: %w", uintptr(p), err)
	}
	if end := uintptr(start) + uintptr(size); uintptr(p)+uintptr(n) > end || n < 0 {
		return fmt.Errorf("%d bytes at %#x run past their allocation (%d bytes at %#x)", n, uintptr(p), int(size), uintptr(start))
	}
	return nil
}

// RuntimeAlloc allocates n bytes through the CUDA runtime (cudaMalloc), in
// the primary context of the runtime's current device, as Triton allocates
// the tensors it hands to a backend. Tests use it; it loads libcudart on
// first use. It needs no Do.
func RuntimeAlloc(n int) (Ptr, error) {
	if err := loadRuntime(); err != nil {
		return 0, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var p C.CUdeviceptr
	if err := checkRuntime("cudaMalloc", C.rc_cudaMalloc(&p, C.size_t(max(n, 1)))); err != nil {
		return 0, fmt.Errorf("allocating %d bytes: %w", n, err)
	}
	return Ptr(p), nil
}

// RuntimeFree frees memory from RuntimeAlloc (cudaFree).
func RuntimeFree(p Ptr) error {
	if err := loadRuntime(); err != nil {
		return err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return checkRuntime("cudaFree", C.rc_cudaFree(p.c()))
}
