package tritonhttp

import "github.com/mergectl/react-triton/triton/tritonhttp/internal/jsontext"

// ErrorBody returns the body of an error response as Triton sends it,
// {"error":"msg"}. The message is escaped as JSON requires, and any bytes
// in it that are not valid UTF-8 become U+FFFD, so the body is always valid
// JSON.
func ErrorBody(msg string) []byte {
	b := make([]byte, 0, len(msg)+16)
	b = append(b, `{"error":`...)
	b = jsontext.AppendString(b, msg, true)
	return append(b, '}')
}
