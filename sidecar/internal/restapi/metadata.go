package restapi

import (
	"net/http"
	"strings"

	"google.golang.org/grpc/metadata"

	"github.com/mergectl/react-triton/sidecar/passthrough"
)

// httpBodyHeaders describe an HTTP body; they mean nothing to the gRPC
// calls the sidecar makes.
var httpBodyHeaders = map[string]bool{
	"content-length": true, "content-encoding": true, "accept-encoding": true,
	"inference-header-content-length": true, "expect": true,
}

// GRPCMetadata is the gRPC metadata of the calls the sidecar makes to Triton
// for an HTTP request: the headers named in forward (triton.forward_headers:
// an authorization header for Triton's restricted endpoints, tracing
// headers), less the body's headers, less what passthrough.Forwardable drops for gRPC
// clients (hop-by-hop headers, grpc's own, ReACT's react-*, private's keys),
// and less values gRPC metadata cannot carry (anything but printable
// ASCII). Any other header stays with the sidecar: a large cookie would
// otherwise make Triton refuse the call.
func GRPCMetadata(h http.Header, forward []string, private *passthrough.PrivateKeys) metadata.MD {
	md := make(metadata.MD, len(forward))
	for _, name := range forward {
		k := strings.ToLower(name)
		if httpBodyHeaders[k] || strings.HasSuffix(k, "-bin") {
			continue
		}
		for _, v := range h.Values(name) {
			if printableASCII(v) {
				md[k] = append(md[k], v)
			}
		}
	}
	return passthrough.Forwardable(md, private)
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
