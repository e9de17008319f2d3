//go:build cgo

package main

/*
#include "triton.h"
*/
import "C"

import (
	"sync"
	"unsafe"

	"github.com/mergectl/react-triton/backend/model"
)

// The Go state of the server's objects, by the address of the C object.
// Triton's own state slots (ModelSetState, ModelInstanceSetState) hold a
// void*, which may not hold a Go pointer; a map keyed by the C address
// needs neither cgo.Handle nor pointer conversions.
var (
	models    sync.Map // uintptr(*TRITONBACKEND_Model) -> *modelState
	instances sync.Map // uintptr(*TRITONBACKEND_ModelInstance) -> *instanceState
)

// modelState is a loaded model and what its instances share.
type modelState struct {
	model *model.Model
	// inputName and outputName are the tensor names as C strings, freed
	// at ModelFinalize; inputWhat and outputWhat name them in errors
	// ("input NAME"), made once rather than on every call.
	inputName, outputName cstring
	inputWhat, outputWhat string
	// metrics are the counters of the model's experiment.
	metrics modelMetrics
}

// instanceState is one instance: its model and its scratch memory, used by
// one execution at a time.
type instanceState struct {
	name    string
	model   *modelState
	scratch model.Scratch
	gather  []byte // an input that arrives in several buffers, joined
	reqs    []model.Request
	// The execution's per-request state, reused: each request's response
	// (nil where none could be made), its failure before the batch ran,
	// and its rows.
	responses []*C.TRITONBACKEND_Response
	failed    []error
	rows      []int64
	// param holds a response parameter's value with its NUL, handed to
	// the server (which copies it) without a C allocation.
	param []byte
}

// key is the map key of a server object: its address.
func key(p unsafe.Pointer) uintptr { return uintptr(p) }
