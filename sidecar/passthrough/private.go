package passthrough

import (
	"strings"
	"sync/atomic"
)

// privateKeys are headers (lower case) that, beside ReACT's own react-*
// keys, never reach Triton: the sampling opt-out header when it is not a
// react-* key (SetPrivateKeys).
var privateKeys atomic.Pointer[map[string]bool]

// SetPrivateKeys replaces the headers and metadata keys, beyond ReACT's
// own, that the proxy never passes on to Triton, on either protocol: the
// sidecar sets the sampling opt-out header here, so that a client's
// opt-out stays between it and the sidecar. Names are compared without
// regard to case; no keys clears the set.
func SetPrivateKeys(keys ...string) {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		if k != "" {
			m[strings.ToLower(k)] = true
		}
	}
	privateKeys.Store(&m)
}

// isPrivate reports whether a header or metadata key never reaches Triton:
// ReACT's own, or one set by SetPrivateKeys.
func isPrivate(key string) bool {
	if p := privateKeys.Load(); p != nil && len(*p) > 0 {
		if (*p)[strings.ToLower(key)] {
			return true
		}
	}
	return false
}
