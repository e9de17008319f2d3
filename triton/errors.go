package triton

import (
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Error is a failed call to Triton: the server's address, the operation,
// and the underlying error. It carries the gRPC status code of the
// underlying error, so status.Code and status.FromError read it, and a gRPC
// handler that returns it passes the code on.
type Error struct {
	Addr string // the server address given to Dial
	Op   string // the operation, e.g. `ModelMetadata "affine_fp32"`
	Code codes.Code
	Err  error
}

// Error formats the error as "triton at ADDR: OP: CODE: message".
func (e *Error) Error() string {
	msg := e.Err.Error()
	if st, ok := status.FromError(e.Err); ok {
		msg = st.Message()
	}
	return fmt.Sprintf("triton at %s: %s: %s: %s", e.Addr, e.Op, e.Code, msg)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// GRPCStatus returns a status with the error's code and full message.
func (e *Error) GRPCStatus() *status.Status { return status.New(e.Code, e.Error()) }

// opName formats an operation on a model for errors.
func opName(rpc, model, version string) string {
	if version == "" {
		return fmt.Sprintf("%s %q", rpc, model)
	}
	return fmt.Sprintf("%s %q version %q", rpc, model, version)
}

// invalidf returns an INVALID_ARGUMENT error.
func invalidf(format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, format, args...)
}

// NotReadyError says that Triton answered that a model version is not
// ready. Its gRPC code is UNAVAILABLE: a model being loaded may become
// ready.
type NotReadyError struct {
	Model, Version string
	Addr           string // the server, for the message
}

// Error formats the error as `model "name" is not ready on Triton ADDR`.
func (e *NotReadyError) Error() string {
	return fmt.Sprintf("%s is not ready on Triton %s", DescribeModel(e.Model, e.Version), e.Addr)
}

// GRPCStatus returns an UNAVAILABLE status with the error's message.
func (e *NotReadyError) GRPCStatus() *status.Status { return status.New(codes.Unavailable, e.Error()) }
