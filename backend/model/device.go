package model

import (
	"context"
	"fmt"
	"math"
	"time"
	"unsafe"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/react"
)

// DeviceRequest is a request whose input is already in the memory of the
// GPU that holds the model's W_p (the cuda backend, docs/gpu.md), as
// Triton hands over the output of a backbone that runs on that GPU: it is
// corrected there, with no copy to the host and back.
type DeviceRequest struct {
	// Shape is the input's shape, [B, D].
	Shape []int64
	// Input is the address of the input's B×D FP32 values on the device.
	Input uintptr
	// Size is the input buffer's size in bytes, as the server gives it:
	// it must be the shape's, so that a correction never reads past the
	// input into a neighbouring tensor of a pooled allocation (which the
	// device's address checks cannot see).
	Size int
	// Keys and Header are the request's parameters, as Request's.
	Keys, Header control.Values
}

// DeviceOutput is where a request's output goes: as many FP32 values as
// its input, at Ptr in the device's memory, or in Host when the server
// placed the output in host memory (Triton's front ends do for a model
// whose output goes to the client).
type DeviceOutput struct {
	Ptr  uintptr
	Host []byte
}

// AllocDevice returns a request's output buffer.
type AllocDevice func() (DeviceOutput, error)

// OnDevice reports whether the model corrects on a device and its input
// and output are FP32, so that an input in the device's memory can be
// corrected there by ExecuteDevice. FP16 and BF16 inputs in device memory
// are copied to the host and corrected by Execute.
func (m *Model) OnDevice() bool {
	return react.CurrentAccelerator() != nil && m.cfg.Input.Datatype == "FP32" && m.cfg.Output.Datatype == "FP32"
}

// ExecuteDevice corrects one request in device memory: it resolves the
// preference as Execute does, and applies W_p with one SGEMM on the device
// into the memory alloc returns (or, when that is host memory, into the
// device's scratch and down to it). A request that applies no correction
// gets its input copied to its output. It fails the request with
// CodeInternal when the model does not correct on a device (see OnDevice).
func (m *Model) ExecuteDevice(ctx context.Context, r DeviceRequest, alloc AllocDevice) Outcome {
	var out Outcome
	if len(r.Shape) != 2 || r.Shape[0] < 0 || r.Shape[1] != int64(m.d) {
		out.Err = invalid("input %q: shape %v: want [batch, %d]", m.cfg.Input.Name, r.Shape, m.d)
		return out
	}
	// cuBLAS's dimensions are C ints; a batch beyond them would also
	// overflow its byte count (4·B·D) and be copied short.
	if r.Shape[0] > math.MaxInt32 {
		out.Err = invalid("input %q: shape %v: a batch of more than %d rows", m.cfg.Input.Name, r.Shape, math.MaxInt32)
		return out
	}
	c, err := m.resolve(r.Header, r.Keys, time.Now())
	if err != nil {
		out.Err = &RequestError{Code: CodeInvalidArgument, Err: err}
		return out
	}
	out.Choice = c
	if !m.OnDevice() {
		out.Err = &RequestError{Code: CodeInternal, Err: control.ErrNotOnDevice}
		return out
	}
	if want := 4 * int(r.Shape[0]) * m.d; r.Size != want {
		out.Err = invalid("input %q: shape %v of FP32 is %d bytes, but its buffer holds %d", m.cfg.Input.Name, r.Shape, want, r.Size)
		return out
	}
	var w *control.Matrix
	if c.Corrects() {
		if w, err = m.matrix(ctx, c); err != nil {
			out.Err = err
			return out
		}
	}
	dst, err := alloc()
	if err != nil {
		out.Err = &RequestError{Code: CodeInternal, Err: err}
		return out
	}
	rows := int(r.Shape[0])
	acc := react.CurrentAccelerator()
	switch {
	case dst.Host != nil && len(dst.Host) != 4*rows*m.d:
		err = fmt.Errorf("output: %d bytes of host memory for %d rows of %d FP32 values", len(dst.Host), rows, m.d)
	case dst.Host != nil && w != nil:
		err = w.ApplyDeviceToHost(unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(dst.Host))), rows*m.d), r.Input, rows)
	case dst.Host != nil:
		err = acc.CopyDeviceToHost(dst.Host, r.Input)
	case w != nil:
		err = w.ApplyDevice(dst.Ptr, r.Input, rows)
	default:
		err = acc.CopyDevice(dst.Ptr, r.Input, 4*rows*m.d)
	}
	if err != nil {
		out.Err = &RequestError{Code: CodeInternal, Err: err}
	}
	return out
}
