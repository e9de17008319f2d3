package sidecar

import (
	"strings"

	"google.golang.org/grpc/metadata"

	"github.com/mergectl/react-triton/control"
)

// notForwarded lists the metadata keys the proxy does not copy from the
// client's call to the upstream call: HTTP/2 hop-by-hop headers, and the
// headers grpc-go writes itself from the call (content type, user agent,
// deadline, compression, status). HTTP/2 pseudo-headers (":authority",
// ":path", ...) are dropped by their leading colon. The deadline still
// travels: it is the upstream call's context deadline.
var notForwarded = map[string]bool{
	"connection":           true,
	"keep-alive":           true,
	"proxy-connection":     true,
	"transfer-encoding":    true,
	"upgrade":              true,
	"host":                 true,
	"te":                   true,
	"content-type":         true,
	"user-agent":           true,
	"grpc-timeout":         true,
	"grpc-encoding":        true,
	"grpc-accept-encoding": true,
	"grpc-message-type":    true,
	"grpc-status":          true,
	"grpc-message":         true,
}

// forwardable returns a copy of the client's metadata without the keys in
// notForwarded, without pseudo-headers and without ReACT's own keys
// ("react-*", which never reach Triton). Everything else, binary "-bin"
// keys and repeated values included, is forwarded as it came.
func forwardable(in metadata.MD) metadata.MD {
	out := make(metadata.MD, len(in))
	for k, v := range in {
		if strings.HasPrefix(k, ":") || notForwarded[k] || control.IsOwnKey(k) {
			continue
		}
		out[k] = append([]string(nil), v...)
	}
	return out
}
