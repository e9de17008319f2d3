package limits

import (
	"errors"
	"io"

	"github.com/mergectl/react-triton/sidecar/passthrough"
	"github.com/mergectl/react-triton/triton/tritonhttp"
)

// readChunk is how much of a body ReadBody reserves and reads at a time
// when its length is not known beforehand.
const readChunk = 256 << 10

// ReadBody reads at most limit bytes of a body, failing with a
// *tritonhttp.TooLargeError beyond, and reserves them on res as it goes
// (all at once when the Content-Length says how many), failing with a
// *BudgetError when they do not fit.
func ReadBody(body io.Reader, length, limit int64, res *Reservation) ([]byte, error) {
	if length > limit {
		return nil, &tritonhttp.TooLargeError{Limit: limit}
	}
	var b []byte
	if length >= 0 {
		if err := res.Grow(length); err != nil {
			return nil, err
		}
		b = make([]byte, 0, length+1)
	}
	for {
		if len(b) == cap(b) {
			n := int64(readChunk)
			if length >= 0 {
				n = min(n, limit+1-int64(len(b))) // a body longer than it said
			}
			if err := res.Grow(n); err != nil {
				return nil, err
			}
			b = append(b, make([]byte, n)...)[:len(b)]
		}
		n, err := body.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if int64(len(b)) > limit {
			return nil, &tritonhttp.TooLargeError{Limit: limit}
		}
		if errors.Is(err, io.EOF) {
			return b, nil
		}
		if passthrough.IsReadTimeout(err) {
			return nil, passthrough.ErrReadTimeout
		}
		if err != nil {
			return nil, &tritonhttp.RequestError{Msg: "reading the request body: " + err.Error()}
		}
	}
}
