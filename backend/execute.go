package main

/*
#include "triton.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"unsafe"

	"github.com/mergectl/react-triton/backend/model"
	"github.com/mergectl/react-triton/control"
)

// TRITONBACKEND_ModelInstanceExecute corrects a batch of requests. Each
// request gets its own response: its corrected embedding, with the applied
// preference echoed in the react-preference response parameter (and the
// experiment's arm in react-arm), or its own error; a bad request never
// fails the others. The batch's statistics go to Triton (per request, and
// for the batch as one execution), and each request's part in the model's
// experiment to its counters.
//
//export TRITONBACKEND_ModelInstanceExecute
func TRITONBACKEND_ModelInstanceExecute(inst *C.TRITONBACKEND_ModelInstance, requests **C.TRITONBACKEND_Request, count C.uint32_t) *C.TRITONSERVER_Error {
	start := nowNS()
	v, ok := instances.Load(key(unsafe.Pointer(inst)))
	if !ok {
		return newError(C.TRITONSERVER_ERROR_INTERNAL, "react backend: execute on an instance that did not initialise")
	}
	is := v.(*instanceState)
	ms := is.model
	reqs := unsafe.Slice(requests, int(count))
	is.responses = resize(is.responses, len(reqs))
	is.failed = resize(is.failed, len(reqs))
	is.rows = resize(is.rows, len(reqs))
	responses, failed, rowsOf := is.responses, is.failed, is.rows
	is.reqs = is.reqs[:0]
	is.gather = is.gather[:0]
	var onDevice map[int]model.Outcome // requests corrected in GPU memory
	for i, r := range reqs {
		if err := goError("creating the response", C.TRITONBACKEND_ResponseNew(&responses[i], r)); err != nil {
			responses[i] = nil
			failed[i] = err
		}
		mr, dev, err := is.read(r)
		if err != nil && failed[i] == nil {
			failed[i] = err
		}
		if dev.ptr != 0 && failed[i] == nil {
			// The input is in the memory of the GPU that holds W_p:
			// corrected there, and left out of the host batch.
			if onDevice == nil {
				onDevice = make(map[int]model.Outcome)
			}
			var after []func() error
			o := ms.model.ExecuteDevice(context.Background(),
				model.DeviceRequest{Shape: mr.Shape, Input: dev.ptr, Size: dev.size, Keys: mr.Keys, Header: mr.Header},
				func() (model.DeviceOutput, error) { return ms.outputDevice(responses[i], mr.Shape, &after) })
			for _, f := range after {
				if err := f(); err != nil && o.Err == nil {
					o.Err = err
				}
			}
			onDevice[i] = o
			mr.Data = nil
		}
		is.reqs = append(is.reqs, mr)
	}
	// Requests that failed to read, and those corrected on the device,
	// take no part in the host batch: an empty shape fails model.Execute's
	// check (even for a device request of zero rows, which would otherwise
	// pass it and get a second output), and their own outcome is the one
	// reported. Their rows count in the batch statistics all the same.
	for i := range is.reqs {
		rowsOf[i] = is.reqs[i].Rows()
		if _, dev := onDevice[i]; failed[i] != nil || dev {
			is.reqs[i] = model.Request{}
		}
	}
	computeStart := nowNS()
	outcomes := ms.model.Execute(context.Background(), is.reqs, func(i int) ([]byte, error) {
		return ms.output(responses[i], is.reqs[i])
	}, &is.scratch)
	computeEnd := nowNS()
	for i, o := range onDevice {
		outcomes[i] = o
	}

	var rows uint64
	for i, r := range reqs {
		err := failed[i]
		if err == nil {
			err = outcomes[i].Err
		}
		if c, ok := ms.model.ExperimentCount(model.Outcome{Choice: outcomes[i].Choice, Err: err}); ok {
			ms.metrics.count(c)
		}
		if responses[i] != nil {
			is.send(responses[i], outcomes[i].Choice, err)
		} else {
			logf(logError, "react instance %s: a request got no response: %v", is.name, err)
		}
		end := nowNS()
		if e := C.TRITONBACKEND_ModelInstanceReportStatistics(inst, r, C.bool(err == nil), start, computeStart, computeEnd, end); e != nil {
			C.TRITONSERVER_ErrorDelete(e)
		}
		if failed[i] == nil {
			rows += uint64(rowsOf[i]) // in the batch, even if it failed later
		}
		if e := goError("releasing the request", C.TRITONBACKEND_RequestRelease(r, C.REACT_REQUEST_RELEASE_ALL)); e != nil {
			logf(logError, "react instance %s: %v", is.name, e)
		}
	}
	if rows > 0 {
		if e := C.TRITONBACKEND_ModelInstanceReportBatchStatistics(inst, C.uint64_t(rows), start, computeStart, computeEnd, nowNS()); e != nil {
			C.TRITONSERVER_ErrorDelete(e)
		}
	}
	is.reqs = is.reqs[:0]
	return nil
}

// resize returns s with n elements, all zero, reusing its memory when it
// can.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// read takes a request's input and preference keys. The input's bytes are
// the server's when they arrive in one host buffer, else joined into the
// instance's gather memory. An input in one buffer of GPU memory, on the
// device the model corrects on (model.OnDevice; the cuda backend uses the
// first visible GPU), is not copied: read returns its address instead,
// with out.Data nil.
func (is *instanceState) read(r *C.TRITONBACKEND_Request) (out model.Request, device deviceInput, err error) {
	out, err = is.readHost(r, &device)
	return out, device, err
}

// deviceInput is an input left in GPU memory: its address and its size in
// bytes, as Triton gives them.
type deviceInput struct {
	ptr  uintptr
	size int
}

// readHost is read; it sets *device, and leaves the input where it is, for
// an input that can be corrected in GPU memory.
func (is *instanceState) readHost(r *C.TRITONBACKEND_Request, device *deviceInput) (model.Request, error) {
	var out model.Request
	err := is.model.readParameters(r, &out)
	if err != nil {
		return out, err
	}
	cfg := is.model.model.Config()
	var in *C.TRITONBACKEND_Input
	if err := goError(is.model.inputWhat, C.TRITONBACKEND_RequestInput(r, is.model.inputName, &in)); err != nil {
		return out, &model.RequestError{Code: model.CodeInvalidArgument, Err: err}
	}
	var dt C.TRITONSERVER_DataType
	var shape *C.int64_t
	var dims, buffers C.uint32_t
	var size C.uint64_t
	if err := goError(is.model.inputWhat, C.TRITONBACKEND_InputProperties(in, nil, &dt, &shape, &dims, &size, &buffers)); err != nil {
		return out, err
	}
	if want := datatypes[cfg.Input.Datatype]; dt != want {
		return out, &model.RequestError{Code: model.CodeInvalidArgument,
			Err: fmt.Errorf("input %q: datatype %d, want %s", cfg.Input.Name, int(dt), cfg.Input.Datatype)}
	}
	for _, d := range unsafe.Slice(shape, int(dims)) {
		out.Shape = append(out.Shape, int64(d))
	}
	start := len(is.gather)
	for b := C.uint32_t(0); b < buffers; b++ {
		var p unsafe.Pointer
		var n C.uint64_t
		mem := C.TRITONSERVER_MemoryType(C.TRITONSERVER_MEMORY_CPU)
		var memID C.int64_t
		if err := goError(is.model.inputWhat, C.TRITONBACKEND_InputBuffer(in, b, &p, &n, &mem, &memID)); err != nil {
			return out, err
		}
		if mem == C.TRITONSERVER_MEMORY_GPU && buffers == 1 && memID == 0 && is.model.model.OnDevice() {
			if uint64(n) != uint64(size) {
				return out, fmt.Errorf("input %q: its buffer holds %d bytes of %d", cfg.Input.Name, uint64(n), uint64(size))
			}
			*device = deviceInput{ptr: uintptr(p), size: int(n)}
			return out, nil
		}
		if mem == C.TRITONSERVER_MEMORY_GPU {
			// Otherwise it is copied to the host, as any CPU backend does.
			if is.gather, err = copyFromGPU(is.gather, p, int(n), int64(memID)); err != nil {
				return out, err
			}
			continue
		}
		data := unsafe.Slice((*byte)(p), int(n))
		if buffers == 1 {
			out.Data = data
			return out, nil
		}
		is.gather = append(is.gather, data...)
	}
	out.Data = is.gather[start:]
	if uint64(len(out.Data)) != uint64(size) {
		return out, fmt.Errorf("input %q: buffers hold %d bytes of %d", cfg.Input.Name, len(out.Data), uint64(size))
	}
	return out, nil
}

// datatypes are Triton's codes of the embedding datatypes.
var datatypes = map[string]C.TRITONSERVER_DataType{
	"FP32": C.TRITONSERVER_TYPE_FP32,
	"FP16": C.TRITONSERVER_TYPE_FP16,
	"BF16": C.TRITONSERVER_TYPE_BF16,
}

// readParameters reads the request parameters the model reads
// (model.Model.Reads: react-preference, react-preset, the experiment's key)
// into out (model.Model.ReadParameter): a string's value, or an integer's
// in decimal.
func (ms *modelState) readParameters(r *C.TRITONBACKEND_Request, out *model.Request) error {
	var n C.uint32_t
	if err := goError("request parameters", C.TRITONBACKEND_RequestParameterCount(r, &n)); err != nil {
		return err
	}
	for i := C.uint32_t(0); i < n; i++ {
		var ckey *C.char
		var typ C.TRITONSERVER_ParameterType
		var val unsafe.Pointer
		if err := goError("request parameters", C.TRITONBACKEND_RequestParameter(r, i, &ckey, &typ, &val)); err != nil {
			return err
		}
		k := C.GoString(ckey)
		if !ms.model.Reads(k) {
			continue
		}
		t, v := model.ParamOther, ""
		switch typ {
		case C.TRITONSERVER_PARAMETER_STRING:
			t, v = model.ParamString, C.GoString((*C.char)(val))
		case C.TRITONSERVER_PARAMETER_INT:
			t, v = model.ParamInt, strconv.FormatInt(int64(*(*C.int64_t)(val)), 10)
		}
		if err := ms.model.ReadParameter(out, k, t, v); err != nil {
			return err
		}
	}
	return nil
}

// output makes the response's output tensor, shaped as the request's input,
// and returns its buffer in host memory.
func (ms *modelState) output(resp *C.TRITONBACKEND_Response, r model.Request) ([]byte, error) {
	cfg := ms.model.Config()
	shape := make([]C.int64_t, len(r.Shape))
	for i, d := range r.Shape {
		shape[i] = C.int64_t(d)
	}
	var out *C.TRITONBACKEND_Output
	if err := goError(ms.outputWhat, C.TRITONBACKEND_ResponseOutput(resp, &out, ms.outputName, datatypes[cfg.Output.Datatype], &shape[0], C.uint32_t(len(shape)))); err != nil {
		return nil, err
	}
	n := len(r.Data)
	if n == 0 {
		return nil, nil
	}
	var p unsafe.Pointer
	mem := C.TRITONSERVER_MemoryType(C.TRITONSERVER_MEMORY_CPU)
	var memID C.int64_t
	if err := goError(ms.outputWhat, C.TRITONBACKEND_OutputBuffer(out, &p, C.uint64_t(n), &mem, &memID)); err != nil {
		return nil, err
	}
	if mem == C.TRITONSERVER_MEMORY_GPU {
		return nil, errors.New(ms.outputWhat + ": the server gave GPU memory for the output of a CPU correction")
	}
	return unsafe.Slice((*byte)(p), n), nil
}

// outputDevice makes the response's output tensor, shaped as the
// request's input, asking Triton for the memory of the GPU the model
// corrects on, and returns where it is. Triton may place it elsewhere (its
// front ends give host memory for an output that goes to the client):
// host memory is returned as such, and the correction is copied down into
// it; memory of another GPU gets the correction through the host, copied
// there after the request's other steps (then returns after).
func (ms *modelState) outputDevice(resp *C.TRITONBACKEND_Response, shape []int64, after *[]func() error) (model.DeviceOutput, error) {
	cfg := ms.model.Config()
	dims := make([]C.int64_t, len(shape))
	n := int64(4) // FP32
	for i, d := range shape {
		dims[i] = C.int64_t(d)
		n *= d
	}
	var out *C.TRITONBACKEND_Output
	if err := goError(ms.outputWhat, C.TRITONBACKEND_ResponseOutput(resp, &out, ms.outputName, datatypes[cfg.Output.Datatype], &dims[0], C.uint32_t(len(dims)))); err != nil {
		return model.DeviceOutput{}, err
	}
	if n == 0 {
		return model.DeviceOutput{}, nil
	}
	var p unsafe.Pointer
	mem := C.TRITONSERVER_MemoryType(C.TRITONSERVER_MEMORY_GPU)
	var memID C.int64_t
	if err := goError(ms.outputWhat, C.TRITONBACKEND_OutputBuffer(out, &p, C.uint64_t(n), &mem, &memID)); err != nil {
		return model.DeviceOutput{}, err
	}
	switch {
	case mem == C.TRITONSERVER_MEMORY_GPU && memID == 0:
		return model.DeviceOutput{Ptr: uintptr(p)}, nil
	case mem == C.TRITONSERVER_MEMORY_GPU:
		host := make([]byte, n)
		device := int64(memID)
		*after = append(*after, func() error { return copyToGPU(p, host, device) })
		return model.DeviceOutput{Host: host}, nil
	default: // CPU or CPU_PINNED
		return model.DeviceOutput{Host: unsafe.Slice((*byte)(p), n)}, nil
	}
}

// respPreference and respArm are the response parameters that echo the
// applied preference and the experiment's arm, as the sidecar's do.
var (
	respPreference = C.CString(control.KeyPreference)
	respArm        = C.CString(control.KeyArm)
)

// send sends a response, final: the corrected output with the applied
// preference (and its arm, when an experiment's arm applied), or the
// request's error.
func (is *instanceState) send(resp *C.TRITONBACKEND_Response, c control.Choice, err error) {
	var terr *C.TRITONSERVER_Error
	if err != nil {
		terr = requestError(err)
		defer C.TRITONSERVER_ErrorDelete(terr)
	} else {
		is.setStringParameter(resp, respPreference, c.Canonical())
		if c.Arm != "" {
			is.setStringParameter(resp, respArm, c.Arm)
		}
	}
	if e := goError("sending the response", C.TRITONBACKEND_ResponseSend(resp, C.REACT_RESPONSE_COMPLETE_FINAL, terr)); e != nil {
		logf(logError, "react instance %s: %v", is.name, e)
	}
}

// setStringParameter sets a string parameter of a response; a failure
// loses the parameter, not the response. The value goes to the server from
// the instance's buffer (the server copies it; a value holding a NUL is cut
// there, as C.CString's would be read).
func (is *instanceState) setStringParameter(resp *C.TRITONBACKEND_Response, name cstring, value string) {
	is.param = append(append(is.param[:0], value...), 0)
	e := C.TRITONBACKEND_ResponseSetStringParameter(resp, name, (*C.char)(unsafe.Pointer(&is.param[0])))
	if e != nil {
		C.TRITONSERVER_ErrorDelete(e)
	}
}
