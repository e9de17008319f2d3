package control

import "strings"

// The request and response keys of ReACT: gRPC metadata and HTTP headers
// (case-insensitive), inference request and response parameters.
const (
	// KeyPreference carries a preference spec ("task=weight,...") in a
	// request, and the canonical form of the applied preference in a
	// response.
	KeyPreference = "react-preference"
	// KeyPreset names a configured preset in a request.
	KeyPreset = "react-preset"
	// KeyArm names the experiment arm that was applied, in a response.
	KeyArm = "react-arm"
	// KeyPrefix starts every key of ReACT's; the sidecar strips all such
	// keys before calling Triton.
	KeyPrefix = "react-"
)

// None is the preference value that asks for no correction: the
// backbone's feature reaches the heads unchanged. It is also what a
// response echoes when no correction was applied.
const None = "none"

// IsOwnKey reports whether a header, metadata or parameter key belongs to
// ReACT (it starts with "react-", in any case).
func IsOwnKey(key string) bool {
	return len(key) >= len(KeyPrefix) && strings.EqualFold(key[:len(KeyPrefix)], KeyPrefix)
}
