//go:build cgo

package main

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
	// at ModelFinalize.
	inputName, outputName cstring
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
}

// key is the map key of a server object: its address.
func key(p unsafe.Pointer) uintptr { return uintptr(p) }
