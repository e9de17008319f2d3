package main

/*
#include <stdlib.h>
#include <time.h>
#include "triton.h"

// now_ns reads the clock Triton's statistics use (steady_clock, which is
// CLOCK_MONOTONIC on Linux), in nanoseconds.
static uint64_t now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static TRITONSERVER_Error *log_message(TRITONSERVER_LogLevel level, const char *msg) {
	return TRITONSERVER_LogMessage(level, "react", 0, msg);
}
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/mergectl/react-triton/backend/model"
)

// cstring is a C string owned by the backend (C.CString), freed with free.
type cstring = *C.char

// freeString frees a C string made by C.CString; nil is ignored.
func freeString(s cstring) {
	if s != nil {
		C.free(unsafe.Pointer(s))
	}
}

// apiPresent reports whether Triton's functions are bound, which they are
// only inside tritonserver.
func apiPresent() bool { return bool(C.backend_api_present()) }

// nowNS is Triton's statistics clock.
func nowNS() C.uint64_t { return C.now_ns() }

// newError makes a Triton error; the receiver (Triton, for an exported
// function's result) owns it.
func newError(code C.TRITONSERVER_Error_Code, msg string) *C.TRITONSERVER_Error {
	cmsg := C.CString(msg)
	defer C.free(unsafe.Pointer(cmsg))
	return C.TRITONSERVER_ErrorNew(code, cmsg)
}

// requestError makes the Triton error of a failed request.
func requestError(err error) *C.TRITONSERVER_Error {
	code := C.TRITONSERVER_Error_Code(C.TRITONSERVER_ERROR_INTERNAL)
	switch model.ErrorCode(err) {
	case model.CodeInvalidArgument:
		code = C.TRITONSERVER_ERROR_INVALID_ARG
	case model.CodeUnavailable:
		code = C.TRITONSERVER_ERROR_UNAVAILABLE
	}
	return newError(code, err.Error())
}

// goError turns a Triton error into a Go error and deletes it; nil stays
// nil. what says which call failed.
func goError(what string, e *C.TRITONSERVER_Error) error {
	if e == nil {
		return nil
	}
	defer C.TRITONSERVER_ErrorDelete(e)
	return fmt.Errorf("%s: %s", what, C.GoString(C.TRITONSERVER_ErrorMessage(e)))
}

// The server log's levels.
const (
	logInfo  = C.TRITONSERVER_LOG_INFO
	logWarn  = C.TRITONSERVER_LOG_WARN
	logError = C.TRITONSERVER_LOG_ERROR
)

// logf writes a line to the server's log.
func logf(level C.TRITONSERVER_LogLevel, format string, args ...any) {
	msg := C.CString(fmt.Sprintf(format, args...))
	defer C.free(unsafe.Pointer(msg))
	if e := C.log_message(level, msg); e != nil {
		C.TRITONSERVER_ErrorDelete(e)
	}
}

// messageJSON serialises a Triton message to JSON (a copy). With owned, the
// message is the caller's (a model's configuration) and is deleted;
// otherwise it is the server's (the backend's configuration).
func messageJSON(msg *C.TRITONSERVER_Message, owned bool) ([]byte, error) {
	if owned {
		defer func() {
			if e := C.TRITONSERVER_MessageDelete(msg); e != nil {
				C.TRITONSERVER_ErrorDelete(e)
			}
		}()
	}
	var base *C.char
	var size C.size_t
	if err := goError("serialising a message", C.TRITONSERVER_MessageSerializeToJson(msg, &base, &size)); err != nil {
		return nil, err
	}
	return C.GoBytes(unsafe.Pointer(base), C.int(size)), nil
}
