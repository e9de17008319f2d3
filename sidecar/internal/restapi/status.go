package restapi

import (
	"math"
	"net/http"
	"strconv"
	"time"

	"google.golang.org/grpc/codes"
)

// SetRetryAfter sets the Retry-After header, in whole seconds.
func SetRetryAfter(w http.ResponseWriter, d time.Duration) {
	w.Header().Set("Retry-After", strconv.FormatInt(int64(math.Ceil(d.Seconds())), 10))
}

// HTTPStatus maps a gRPC status code to the HTTP status Triton uses for
// the same error.
func HTTPStatus(c codes.Code) int {
	switch c {
	case codes.OK:
		return http.StatusOK
	case codes.NotFound:
		return http.StatusNotFound
	case codes.Unavailable:
		return http.StatusBadGateway
	case codes.DeadlineExceeded:
		return http.StatusGatewayTimeout
	case codes.Unimplemented:
		return http.StatusNotImplemented
	case codes.Internal, codes.Unknown, codes.DataLoss:
		return http.StatusInternalServerError
	case codes.ResourceExhausted:
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusBadRequest
}
