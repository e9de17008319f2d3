package tritonhttp

import "github.com/mergectl/react-triton/triton/tritonhttp/internal/jsontext"

// scanner reads the JSON header of a request or a response
// (jsontext.Scanner), with the limits that bound the parameters of one
// object.
type scanner struct {
	*jsontext.Scanner
	// lim bounds the parameters of one object (the other limits are the
	// request's).
	lim Limits
}
