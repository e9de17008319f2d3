package frontdoor

import (
	"fmt"
	"net/http"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/sidecar/metrics"
	"github.com/mergectl/react-triton/sidecar/passthrough"
)

// headerFieldOverhead is what HTTP/2 adds to each header field's name and
// value when it counts a header list's size (RFC 9113, 6.5.2), and what
// Triton's gRPC server counts against its metadata limit.
const headerFieldOverhead = 32

// httpHeaderSize is the size of a request's header section, counted as
// HTTP/2 counts a header list: every field's name and value, plus 32 bytes
// each, the Host field included.
func httpHeaderSize(r *http.Request) int {
	n := 0
	if r.Host != "" {
		n += len("host") + len(r.Host) + headerFieldOverhead
	}
	for k, vs := range r.Header {
		for _, v := range vs {
			n += len(k) + len(v) + headerFieldOverhead
		}
	}
	return n
}

// metadataSize is the size of a gRPC call's metadata, counted the same way.
func metadataSize(md metadata.MD) int {
	n := 0
	for k, vs := range md {
		for _, v := range vs {
			n += len(k) + len(v) + headerFieldOverhead
		}
	}
	return n
}

// headerLimitMessage says why a request's headers were refused.
func headerLimitMessage(what string, size, limit int) string {
	return fmt.Sprintf("sidecar: the request's %s take %d bytes (counted as HTTP/2 does: name, value and 32 bytes a field), more than server.max_header_bytes (%d)", what, size, limit)
}

// limitHTTPHeaders wraps next so that a request whose header section is
// larger than limit is answered 431 Request Header Fields Too Large and
// never reaches Triton. (Go's server itself answers 431 without a body to
// headers far larger, beyond limit + 4 KiB read.)
func limitHTTPHeaders(limit int, m *metrics.Metrics, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n := httpHeaderSize(r); n > limit {
			if m != nil {
				m.Reject("http", "headers_too_large")
			}
			passthrough.WriteHTTPError(w, http.StatusRequestHeaderFieldsTooLarge, headerLimitMessage("headers", n, limit))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// checkMetadataSize returns an INVALID_ARGUMENT status for a gRPC call
// whose metadata is larger than limit, nil otherwise.
func checkMetadataSize(md metadata.MD, limit int) error {
	if n := metadataSize(md); n > limit {
		return status.Error(codes.InvalidArgument, headerLimitMessage("metadata", n, limit))
	}
	return nil
}
