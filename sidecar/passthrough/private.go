package passthrough

import (
	"strings"

	"github.com/mergectl/react-triton/control"
)

// PrivateKeys are headers and metadata keys that, beside ReACT's own
// react-* keys, never reach Triton on either protocol: the sampling
// opt-out header of the configuration in service, so that a client's
// opt-out stays between it and the sidecar. They belong to a
// configuration: the sidecar builds them with it (controllable.Models, on
// each load and reload) and the proxies ask for those in service on each
// call. Names are compared without regard to case. A PrivateKeys is
// immutable; a nil *PrivateKeys holds none.
type PrivateKeys struct {
	keys map[string]bool // lower case
}

// NewPrivateKeys returns the keys named ("" names none), nil for none.
func NewPrivateKeys(keys ...string) *PrivateKeys {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		if k != "" {
			m[strings.ToLower(k)] = true
		}
	}
	if len(m) == 0 {
		return nil
	}
	return &PrivateKeys{keys: m}
}

// Has reports whether key, in any case, is one of p's.
func (p *PrivateKeys) Has(key string) bool {
	return p != nil && p.keys[strings.ToLower(key)]
}

// private reports whether a header or metadata key never reaches Triton:
// ReACT's own, or one of p's.
func (p *PrivateKeys) private(key string) bool {
	return control.IsOwnKey(key) || p.Has(key)
}
