//go:build cuda

package cuda

/*
#include <stdlib.h>
#include "calls.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// roundPTX is the one kernel of ours, in PTX (NVIDIA's virtual
// instruction set), so that no CUDA compiler is needed to build: the
// driver compiles it for the device when the device is opened.
//
// round_f64_f32(dst, src, n, bad) rounds n float64 values at src to the
// nearest float32 at dst (cvt.rn, as Go's float32 conversion), and sets
// the 32-bit flag at bad to 1 if any result is infinite or NaN (beyond
// float32's range, as react.Float32MatrixTo refuses). A grid-stride loop:
// any grid covers any n.
const roundPTX = `
.version 6.0
.target sm_60
.address_size 64

.visible .entry round_f64_f32(
	.param .u64 p_dst,
	.param .u64 p_src,
	.param .u64 p_n,
	.param .u64 p_bad
)
{
	.reg .pred %p<3>;
	.reg .b32 %r<6>;
	.reg .b64 %rd<12>;
	.reg .f32 %f<3>;
	.reg .f64 %fd<2>;

	ld.param.u64 %rd1, [p_dst];
	ld.param.u64 %rd2, [p_src];
	ld.param.u64 %rd3, [p_n];
	ld.param.u64 %rd4, [p_bad];
	cvta.to.global.u64 %rd1, %rd1;
	cvta.to.global.u64 %rd2, %rd2;
	cvta.to.global.u64 %rd4, %rd4;
	mov.u32 %r1, %ctaid.x;
	mov.u32 %r2, %ntid.x;
	mov.u32 %r3, %tid.x;
	mov.u32 %r4, %nctaid.x;
	mov.u32 %r5, 1;
	mul.wide.u32 %rd5, %r1, %r2;
	cvt.u64.u32 %rd6, %r3;
	add.u64 %rd5, %rd5, %rd6;
	mul.wide.u32 %rd7, %r4, %r2;
LOOP:
	setp.ge.u64 %p1, %rd5, %rd3;
	@%p1 bra DONE;
	shl.b64 %rd8, %rd5, 3;
	add.u64 %rd9, %rd2, %rd8;
	ld.global.f64 %fd1, [%rd9];
	cvt.rn.f32.f64 %f1, %fd1;
	shl.b64 %rd10, %rd5, 2;
	add.u64 %rd11, %rd1, %rd10;
	st.global.f32 [%rd11], %f1;
	abs.f32 %f2, %f1;
	setp.le.f32 %p2, %f2, 0f7F7FFFFF;
	@!%p2 st.global.u32 [%rd4], %r5;
	add.u64 %rd5, %rd5, %rd7;
	bra LOOP;
DONE:
	ret;
}
`

// kernels are the device's compiled kernels.
type kernels struct {
	module C.CUmodule
	round  C.CUfunction
}

// loadKernels compiles roundPTX for the device. Call it inside Do.
func (d *Device) loadKernels() error {
	src := C.CString(roundPTX)
	defer C.free(unsafe.Pointer(src))
	if err := check("cuModuleLoadData", C.rc_cuModuleLoadData(&d.kern.module, unsafe.Pointer(src))); err != nil {
		return fmt.Errorf("compiling our kernel: %w", err)
	}
	name := C.CString("round_f64_f32")
	defer C.free(unsafe.Pointer(name))
	return check("cuModuleGetFunction", C.rc_cuModuleGetFunction(&d.kern.round, d.kern.module, name))
}

// unloadKernels frees the module. Call it inside Do.
func (d *Device) unloadKernels() {
	if d.kern.module != nil {
		C.rc_cuModuleUnload(d.kern.module)
		d.kern.module, d.kern.round = nil, nil
	}
}

// RoundTo32 queues rounding n float64 values at src to float32 at dst, and
// setting the int32 at bad to 1 if any is beyond float32's range (bad is
// not cleared first: zero it before). Call it inside Do.
func (d *Device) RoundTo32(dst, src Ptr, n int, bad Ptr) error {
	if n <= 0 {
		return nil
	}
	const block = 256
	grid := min((n+block-1)/block, 4096)
	return check("cuLaunchKernel", C.rc_launch_round(d.kern.round, C.uint(grid), block, d.cur.stream,
		dst.c(), src.c(), C.ulonglong(n), bad.c()))
}
