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

// TritonError is a request refused the way Triton's HTTP server refuses
// it: with Triton's status (400 or 500) and Triton's own message, so that
// a client sees the same answer with or without a front. Triton answers a
// JSON header that does not parse with 500 and "failed to parse the request
// JSON buffer: <reason> at <offset>", and an Inference-Header-Content-Length
// outside the body with 400.
type TritonError struct {
	Status int
	Msg    string
	// ContentType is the answer's Content-Type when it is not
	// application/json: Triton answers a bad header length as text/plain
	// (with a JSON body).
	ContentType string
}

func (e *TritonError) Error() string { return e.Msg }

// LimitError reports a request with more inputs, outputs or parameters
// than the Limits given to ParseRequestWith allow: answered with HTTP 413.
type LimitError struct {
	// What is "inputs", "outputs" or "parameters".
	What string
	// Limit is the bound that was passed.
	Limit int
}

func (e *LimitError) Error() string {
	switch e.What {
	case "parameters":
		return fmt.Sprintf("more than %d parameters in one object", e.Limit)
	}
	return fmt.Sprintf("more than %d %s", e.Limit, e.What)
}
