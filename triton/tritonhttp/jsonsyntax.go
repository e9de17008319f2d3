package tritonhttp

import (
	"fmt"

	"github.com/mergectl/react-triton/triton/tritonhttp/internal/rapidjson"
)

// Triton's HTTP server parses the JSON header of an inference request with
// rapidjson (NaN and Inf allowed) before it looks at anything else, and
// answers a header that does not parse with 500 and rapidjson's reason and
// offset. syntaxError reproduces that check (package rapidjson), so that
// the sidecar refuses a malformed header with Triton's own answer instead
// of one of its own.

// tritonJSONErrorMessage is Triton's answer to a header that does not
// parse: rapidjson's message and offset.
const tritonJSONErrorMessage = "failed to parse the request JSON buffer: %s at %d"

// syntaxError returns the *TritonError Triton answers a JSON header with,
// nil when the header parses, and the deepest nesting it read.
func syntaxError(buf []byte) (*TritonError, int) {
	msg, at, depth := rapidjson.Check(buf)
	if msg == "" {
		return nil, depth
	}
	return &TritonError{Status: 500, Msg: fmt.Sprintf(tritonJSONErrorMessage, msg, at)}, depth
}
