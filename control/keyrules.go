package control

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// The rules of where a request carries a client's key (an experiment's, the
// sidecar's admission key) and of an experiment's window, on every surface:
// the sidecar's YAML and the react backend's model parameters report them
// at their own paths.

// headerName is an HTTP header name (a token), which gRPC metadata keys
// also are.
var headerName = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")

// TritonParameters are the inference request parameters Triton reserves
// for itself (besides every name that starts with "triton_").
var TritonParameters = []string{"sequence_id", "sequence_start", "sequence_end", "priority", "timeout", "binary_data_output", "headers"}

// CheckKeyHeader returns what is wrong with a header (gRPC metadata key)
// named to carry a client's key, or "": it must be a header name, not one
// of ReACT's own react-* keys, and not a key gRPC reserves (grpc-*) or
// gives binary values (*-bin).
func CheckKeyHeader(h string) string {
	lower := strings.ToLower(h)
	switch {
	case !headerName.MatchString(h):
		return fmt.Sprintf("%q is not a header name", h)
	case IsOwnKey(h):
		return fmt.Sprintf("%q: react-* keys are ReACT's own", h)
	case strings.HasSuffix(lower, "-bin") || strings.HasPrefix(lower, "grpc-"):
		return fmt.Sprintf("%q: gRPC reserves grpc-* keys and gives -bin keys binary values", h)
	}
	return ""
}

// CheckKeyParameter returns what is wrong with an inference request
// parameter named to carry an experiment's key, or "": not one of ReACT's
// own react-* keys, not one Triton reserves (TritonParameters, triton_*),
// and no white space around it.
func CheckKeyParameter(p string) string {
	switch {
	case IsOwnKey(p):
		return fmt.Sprintf("%q: react-* keys are ReACT's own", p)
	case strings.HasPrefix(p, "triton_") || slices.Contains(TritonParameters, p):
		return fmt.Sprintf("%q is a parameter Triton reserves", p)
	case strings.TrimSpace(p) != p:
		return fmt.Sprintf("%q has white space around it", p)
	}
	return ""
}

// CheckWindow returns what is wrong with an experiment's window [start,
// end), nil when it is not empty; a zero time leaves its side open. The
// message names the end, which a surface reports at the end's place.
func CheckWindow(start, end time.Time) error {
	if !start.IsZero() && !end.IsZero() && !start.Before(end) {
		return fmt.Errorf("%s is not after start %s", end.Format(time.RFC3339), start.Format(time.RFC3339))
	}
	return nil
}
