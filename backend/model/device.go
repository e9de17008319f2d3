package model

import (
	"context"

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
	// Keys are the request's react-preference and react-preset parameters.
	Keys control.Values
}

// AllocDevice returns the address of a request's output on the device: as
// many FP32 values as its input.
type AllocDevice func() (uintptr, error)

// OnDevice reports whether the model corrects on a device and its input
// and output are FP32, so that an input in the device's memory can be
// corrected there by ExecuteDevice. FP16 and BF16 inputs in device memory
// are copied to the host and corrected by Execute.
func (m *Model) OnDevice() bool {
	return react.CurrentAccelerator() != nil && m.cfg.Input.Datatype == "FP32" && m.cfg.Output.Datatype == "FP32"
}

// ExecuteDevice corrects one request in device memory: it resolves the
// preference as Execute does, and applies W_p with one SGEMM on the device
// into the memory alloc returns. A request that applies no correction gets
// its input copied to its output on the device. It fails the request with
// CodeInternal when the model does not correct on a device (see OnDevice).
func (m *Model) ExecuteDevice(ctx context.Context, r DeviceRequest, alloc AllocDevice) Outcome {
	var out Outcome
	if len(r.Shape) != 2 || r.Shape[0] < 0 || r.Shape[1] != int64(m.d) {
		out.Err = invalid("input %q: shape %v: want [batch, %d]", m.cfg.Input.Name, r.Shape, m.d)
		return out
	}
	c, err := m.profile.Resolve(control.Request{Parameter: r.Keys})
	if err != nil {
		out.Err = &RequestError{Code: CodeInvalidArgument, Err: err}
		return out
	}
	out.Choice = c
	if !m.OnDevice() {
		out.Err = &RequestError{Code: CodeInternal, Err: control.ErrNotOnDevice}
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
	if w != nil {
		err = w.ApplyDevice(dst, r.Input, rows)
	} else {
		err = react.CurrentAccelerator().CopyDevice(dst, r.Input, 4*rows*m.d)
	}
	if err != nil {
		out.Err = &RequestError{Code: CodeInternal, Err: err}
	}
	return out
}
