package main

/*
#include "triton.h"
*/
import "C"

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"unsafe"

	"github.com/mergectl/react-triton/backend/model"
	"github.com/mergectl/react-triton/react"
	// The cuda backend (--backend-config=react,linalg-backend=cuda), in a
	// build with the cuda tag.
	_ "github.com/mergectl/react-triton/react/cudadevice"
)

// The entry points Triton calls, in the order of a model's life:
// Initialize once per process, ModelInitialize per model (version) load,
// ModelInstanceInitialize per instance, ModelInstanceExecute per batch, then
// the Finalize calls in reverse. An error returned to Triton fails the step
// (a model's load, say) and is owned by Triton.

// TRITONBACKEND_Initialize checks the server's backend API version against
// the one this backend was written for and applies the backend's
// command-line configuration (--backend-config=react,<key>=<value>).
//
//export TRITONBACKEND_Initialize
func TRITONBACKEND_Initialize(backend *C.TRITONBACKEND_Backend) *C.TRITONSERVER_Error {
	var major, minor C.uint32_t
	if err := goError("reading the backend API version", C.TRITONBACKEND_ApiVersion(&major, &minor)); err != nil {
		return newError(C.TRITONSERVER_ERROR_INTERNAL, "react backend: "+err.Error())
	}
	if major != C.REACT_BACKEND_API_MAJOR || minor < C.REACT_BACKEND_API_MINOR {
		return newError(C.TRITONSERVER_ERROR_UNSUPPORTED, fmt.Sprintf(
			"react backend: written against Triton's backend API %d.%d; this server has %d.%d (need %d.x with x ≥ %d)",
			C.REACT_BACKEND_API_MAJOR, C.REACT_BACKEND_API_MINOR, major, minor, C.REACT_BACKEND_API_MAJOR, C.REACT_BACKEND_API_MINOR))
	}
	var msg *C.TRITONSERVER_Message
	if err := goError("reading the backend configuration", C.TRITONBACKEND_BackendConfig(backend, &msg)); err != nil {
		return newError(C.TRITONSERVER_ERROR_INTERNAL, "react backend: "+err.Error())
	}
	data, err := messageJSON(msg, false) // the server's
	if err == nil {
		err = configureBackend(data)
	}
	if err != nil {
		return newError(C.TRITONSERVER_ERROR_INVALID_ARG, "react backend: "+err.Error())
	}
	linalg := react.CurrentBackend()
	if acc := react.CurrentAccelerator(); acc != nil {
		linalg += " (" + acc.Name() + ")"
	}
	logf(logInfo, "react backend: API %d.%d (server %d.%d), linear algebra %s with %d thread(s)",
		C.REACT_BACKEND_API_MAJOR, C.REACT_BACKEND_API_MINOR, major, minor, linalg, linalgThreads)
	initMetrics()
	return nil
}

// The backend's command-line configuration keys.
const (
	// cfgLinalgBackend picks the linear algebra: auto, go, openblas or
	// cuda.
	cfgLinalgBackend = "linalg-backend"
	// cfgLinalgThreads is the number of threads one correction may use
	// (default 1: Triton runs the instances in parallel already).
	cfgLinalgThreads = "linalg-threads"
)

// linalgThreads is the configured thread count, for the log.
var linalgThreads = 1

// configureBackend applies the backend's configuration, Triton's JSON
// {"cmdline": {key: value}}. Triton adds keys of its own (the backend
// directory, the default max batch size, ...), which are ignored.
func configureBackend(data []byte) error {
	var cfg struct {
		Cmdline map[string]string `json:"cmdline"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return fmt.Errorf("backend configuration: %w", err)
	}
	name := react.BackendAuto
	if v, ok := cfg.Cmdline[cfgLinalgBackend]; ok {
		name = v
	}
	if _, err := react.UseBackend(name); err != nil {
		return fmt.Errorf("--backend-config=react,%s=%s: %w", cfgLinalgBackend, name, err)
	}
	if why := react.BackendFallback(); why != "" {
		logf(logWarn, "react backend: %s", why)
	}
	if v, ok := cfg.Cmdline[cfgLinalgThreads]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return fmt.Errorf("--backend-config=react,%s=%s: want a positive integer", cfgLinalgThreads, v)
		}
		linalgThreads = n
	}
	react.SetBackendThreads(linalgThreads)
	return nil
}

// TRITONBACKEND_Finalize is called once, when the server shuts down,
// after every model's ModelFinalize: it deletes the metric families.
//
//export TRITONBACKEND_Finalize
func TRITONBACKEND_Finalize(backend *C.TRITONBACKEND_Backend) *C.TRITONSERVER_Error {
	finalizeMetrics()
	return nil
}

// TRITONBACKEND_ModelInitialize loads a model version: it validates the
// configuration and the components file completely and solves the default
// and preset W_p, so that a model either loads whole or fails its load
// with every problem named.
//
//export TRITONBACKEND_ModelInitialize
func TRITONBACKEND_ModelInitialize(m *C.TRITONBACKEND_Model) *C.TRITONSERVER_Error {
	var cname *C.char
	var version C.uint64_t
	var kind C.TRITONBACKEND_ArtifactType
	var location *C.char
	var msg *C.TRITONSERVER_Message
	err := goError("model name", C.TRITONBACKEND_ModelName(m, &cname))
	if err == nil {
		err = goError("model version", C.TRITONBACKEND_ModelVersion(m, &version))
	}
	if err == nil {
		err = goError("model repository", C.TRITONBACKEND_ModelRepository(m, &kind, &location))
	}
	if err == nil {
		err = goError("model configuration", C.TRITONBACKEND_ModelConfig(m, 1, &msg))
	}
	if err != nil {
		return newError(C.TRITONSERVER_ERROR_INTERNAL, "react backend: "+err.Error())
	}
	name := C.GoString(cname)
	fail := func(err error) *C.TRITONSERVER_Error {
		// Joined problems go on one line, as Triton logs and returns it.
		text := strings.ReplaceAll(err.Error(), "\n", "; ")
		return newError(C.TRITONSERVER_ERROR_INVALID_ARG, fmt.Sprintf("react model %s version %d: %s", name, uint64(version), text))
	}
	// The configuration message is ours to delete whatever happens next.
	data, err := messageJSON(msg, true)
	if err != nil {
		return fail(err)
	}
	if kind != C.TRITONBACKEND_ARTIFACT_FILESYSTEM {
		return fail(fmt.Errorf("model artifacts of type %d: only a file system is supported", int(kind)))
	}
	versionDir := filepath.Join(C.GoString(location), strconv.FormatUint(uint64(version), 10))
	cfg, err := model.ParseConfig(data, versionDir)
	if err != nil {
		return fail(err)
	}
	mdl, err := model.Load(context.Background(), cfg, versionDir)
	if err != nil {
		return fail(err)
	}
	st := &modelState{model: mdl, inputName: C.CString(cfg.Input.Name), outputName: C.CString(cfg.Output.Name),
		inputWhat: "input " + cfg.Input.Name, outputWhat: "output " + cfg.Output.Name}
	models.Store(key(unsafe.Pointer(m)), st)
	p := mdl.Profile()
	logf(logInfo, "react model %s version %d: %s, D=%d, tasks %s, default %s, presets [%s], %s",
		name, uint64(version), mdl.ComponentsPath(), mdl.D(), strings.Join(p.Tasks(), ","),
		p.Default().Canonical(), strings.Join(p.Presets(), ","), cfg.Input.Datatype)
	if e := mdl.Experiment(); e != nil {
		logf(logInfo, "react model %s version %d: experiment %s, arms [%s], traffic %g, key %s",
			name, uint64(version), e.Name(), strings.Join(e.Arms(), ","), e.Split().Traffic(), experimentKey(cfg.Experiment))
	}
	return nil
}

// experimentKey says where an experiment reads its key, for the log.
func experimentKey(e *model.Experiment) string {
	var where []string
	if e.KeyHeader != "" {
		where = append(where, "header "+e.KeyHeader)
	}
	if e.KeyParameter != "" {
		where = append(where, "parameter "+e.KeyParameter)
	}
	return strings.Join(where, ", then ")
}

// TRITONBACKEND_ModelFinalize unloads a model version. Its memory goes back
// to the operating system at once, so that loading and unloading in a
// loop does not grow the server.
//
//export TRITONBACKEND_ModelFinalize
func TRITONBACKEND_ModelFinalize(m *C.TRITONBACKEND_Model) *C.TRITONSERVER_Error {
	if v, ok := models.LoadAndDelete(key(unsafe.Pointer(m))); ok {
		st := v.(*modelState)
		freeString(st.inputName)
		freeString(st.outputName)
		st.metrics.close()
		st.model = nil
	}
	debug.FreeOSMemory()
	return nil
}

// TRITONBACKEND_ModelInstanceInitialize makes an instance's state: its
// model's and its own scratch memory.
//
//export TRITONBACKEND_ModelInstanceInitialize
func TRITONBACKEND_ModelInstanceInitialize(inst *C.TRITONBACKEND_ModelInstance) *C.TRITONSERVER_Error {
	var cname *C.char
	var m *C.TRITONBACKEND_Model
	err := goError("instance name", C.TRITONBACKEND_ModelInstanceName(inst, &cname))
	if err == nil {
		err = goError("instance model", C.TRITONBACKEND_ModelInstanceModel(inst, &m))
	}
	if err != nil {
		return newError(C.TRITONSERVER_ERROR_INTERNAL, "react backend: "+err.Error())
	}
	v, ok := models.Load(key(unsafe.Pointer(m)))
	if !ok {
		return newError(C.TRITONSERVER_ERROR_INTERNAL, "react backend: instance "+C.GoString(cname)+" of a model that did not load")
	}
	instances.Store(key(unsafe.Pointer(inst)), &instanceState{name: C.GoString(cname), model: v.(*modelState)})
	return nil
}

// TRITONBACKEND_ModelInstanceFinalize drops an instance's state.
//
//export TRITONBACKEND_ModelInstanceFinalize
func TRITONBACKEND_ModelInstanceFinalize(inst *C.TRITONBACKEND_ModelInstance) *C.TRITONSERVER_Error {
	instances.Delete(key(unsafe.Pointer(inst)))
	return nil
}
