package pipeline

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/control"
)

// overloadError is the status of a request whose new preference the W_p
// cache would not solve now (a *control.OverloadError): RESOURCE_EXHAUSTED,
// with the cause, and its RetryAfter, for the server to answer with.
type overloadError struct {
	model string
	err   *control.OverloadError
}

func (e *overloadError) Error() string { return e.GRPCStatus().Message() }

// GRPCStatus is RESOURCE_EXHAUSTED, naming the model.
func (e *overloadError) GRPCStatus() *status.Status {
	return status.Newf(codes.ResourceExhausted, "model %q: %v", e.model, e.err)
}

// Unwrap returns the *control.OverloadError.
func (e *overloadError) Unwrap() error { return e.err }

// causeError is a status that keeps its cause, for a server to tell
// refusals apart (control.ErrPresetsOnly).
type causeError struct {
	st  *status.Status
	err error
}

func (e *causeError) Error() string              { return e.st.Message() }
func (e *causeError) GRPCStatus() *status.Status { return e.st }
func (e *causeError) Unwrap() error              { return e.err }
