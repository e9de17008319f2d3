package passthrough

import (
	"context"
	"net"
	"strings"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
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

// Forwardable returns a copy of the client's metadata without the keys in
// notForwarded, without pseudo-headers, without ReACT's own keys
// ("react-*", which never reach Triton) and without private's (the
// sampling opt-out header). Everything else, binary "-bin" keys and
// repeated values included, is forwarded as it came.
func Forwardable(in metadata.MD, private *PrivateKeys) metadata.MD {
	out := make(metadata.MD, len(in))
	for k, v := range in {
		if strings.HasPrefix(k, ":") || notForwarded[k] || private.private(k) {
			continue
		}
		out[k] = append([]string(nil), v...)
	}
	return out
}

// forwardedFor is the X-Forwarded-For value the sidecar passes on: the
// client's own value(s), then the address of the peer it heard the request
// from, as a proxy appends it. Clients can write anything in what they
// send; only the last entry is the sidecar's own observation.
func forwardedFor(prior []string, peerHost string) string {
	if peerHost == "" {
		return strings.Join(prior, ", ")
	}
	if len(prior) == 0 {
		return peerHost
	}
	return strings.Join(prior, ", ") + ", " + peerHost
}

// hostOf returns the host of a host:port address (the whole string when it
// has no port).
func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

// peerHost returns the host of a gRPC call's peer, "" when unknown.
func peerHost(ctx context.Context) string {
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		return hostOf(p.Addr.String())
	}
	return ""
}

// upstreamMetadata is the metadata of a call the sidecar makes to Triton on
// behalf of a gRPC call: the client's forwardable metadata (less
// private's keys), with the peer appended to x-forwarded-for.
func upstreamMetadata(ctx context.Context, private *PrivateKeys) metadata.MD {
	in, _ := metadata.FromIncomingContext(ctx)
	md := Forwardable(in, private)
	if v := forwardedFor(md["x-forwarded-for"], peerHost(ctx)); v != "" {
		md["x-forwarded-for"] = []string{v}
	}
	return md
}

// UpstreamContext is the context of a call the sidecar makes to Triton on a
// client's behalf: the client's deadline, cancellation and forwardable
// metadata (less private's keys), with the peer appended to
// x-forwarded-for.
func UpstreamContext(ctx context.Context, private *PrivateKeys) context.Context {
	return metadata.NewOutgoingContext(ctx, upstreamMetadata(ctx, private))
}
