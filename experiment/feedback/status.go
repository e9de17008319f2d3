package feedback

import (
	"net/http"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// statuses maps each reason to its HTTP status and gRPC code: the one
// place the transports read them from. An expired id is NOT_FOUND like an
// unknown one (the request is no longer there to join); the message and
// react_experiment_feedback_rejected_total's reason tell them apart.
var statuses = [...]struct {
	http int
	grpc codes.Code
}{
	Unknown:   {http.StatusNotFound, codes.NotFound},
	Expired:   {http.StatusNotFound, codes.NotFound},
	Duplicate: {http.StatusConflict, codes.AlreadyExists},
	Invalid:   {http.StatusBadRequest, codes.InvalidArgument},
}

// HTTPStatus returns the HTTP status of a Join's outcome: 200 for nil,
// 404 for an unknown or expired id, 409 for a duplicate, 400 for an
// invalid feedback, 500 for any other error.
func HTTPStatus(err error) int {
	if err == nil {
		return http.StatusOK
	}
	if r := ReasonOf(err); r > 0 && int(r) < len(statuses) {
		return statuses[r].http
	}
	return http.StatusInternalServerError
}

// GRPCCode returns the gRPC code of a Join's outcome: OK for nil,
// NotFound for an unknown or expired id, AlreadyExists for a duplicate,
// InvalidArgument for an invalid feedback, Internal for any other error.
func GRPCCode(err error) codes.Code {
	if err == nil {
		return codes.OK
	}
	if r := ReasonOf(err); r > 0 && int(r) < len(statuses) {
		return statuses[r].grpc
	}
	return codes.Internal
}

// GRPCStatus returns e as a gRPC status, so that a gRPC handler may
// return e itself (grpc-go reads the status with status.FromError).
func (e *Error) GRPCStatus() *status.Status {
	return status.New(GRPCCode(e), e.Error())
}
