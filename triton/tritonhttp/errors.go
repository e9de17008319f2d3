package tritonhttp

import (
	"fmt"
	"strconv"
)

// RequestError reports a malformed or unsupported HTTP inference request:
// the client's fault, answered with HTTP 400 and the error's message.
type RequestError struct {
	Msg string
}

func (e *RequestError) Error() string { return e.Msg }

// requestErrorf returns a *RequestError with a formatted message.
func requestErrorf(format string, args ...any) error {
	return &RequestError{Msg: fmt.Sprintf(format, args...)}
}

// TooLargeError reports a request body larger than the limit given to
// ReadBody, before or after decompression: answered with HTTP 413.
type TooLargeError struct {
	Limit int64
}

func (e *TooLargeError) Error() string {
	return "request body larger than " + strconv.FormatInt(e.Limit, 10) + " bytes"
}

// EncodingError reports a Content-Encoding that ReadBody does not decode.
// Triton answers it with HTTP 501 and an "Accept-Encoding: gzip, deflate"
// header.
type EncodingError struct {
	Encoding string
}

func (e *EncodingError) Error() string {
	return fmt.Sprintf("unsupported Content-Encoding %q (supported: gzip, deflate, identity)", e.Encoding)
}
