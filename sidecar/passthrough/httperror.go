package passthrough

import (
	"errors"
	"net/http"
	"os"

	"github.com/mergectl/react-triton/triton/tritonhttp"
)

// IsReadTimeout reports whether err comes from a read past the
// connection's deadline (server.read_timeout).
func IsReadTimeout(err error) bool {
	return errors.Is(err, os.ErrDeadlineExceeded)
}

// ErrReadTimeout is a request body that did not arrive within
// server.read_timeout.
var ErrReadTimeout = errors.New("the request did not arrive within server.read_timeout")

// WriteHTTPError answers {"error": msg} with an HTTP status, as Triton
// answers an error.
func WriteHTTPError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(tritonhttp.ErrorBody(msg))
}
