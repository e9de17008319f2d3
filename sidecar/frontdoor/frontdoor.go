package frontdoor

import (
	"cmp"
	"context"
	"math"
	"net/http"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/metrics"
)

// ServerLimits returns c, or the defaults when c is the zero value (a
// Config built by hand: tests, embedding), so that every server is
// bounded. Keys that must be positive take their default when zero.
func ServerLimits(c config.Server) config.Server {
	d := config.Default().Server
	if c == (config.Server{}) {
		return d
	}
	c.MaxConnections = cmp.Or(c.MaxConnections, d.MaxConnections)
	c.MaxHeaderBytes = cmp.Or(c.MaxHeaderBytes, d.MaxHeaderBytes)
	c.ReadHeaderTimeout = cmp.Or(c.ReadHeaderTimeout, d.ReadHeaderTimeout)
	c.GRPC.MaxConcurrentStreams = cmp.Or(c.GRPC.MaxConcurrentStreams, d.GRPC.MaxConcurrentStreams)
	c.GRPC.KeepaliveTime = cmp.Or(c.GRPC.KeepaliveTime, d.GRPC.KeepaliveTime)
	c.GRPC.KeepaliveTimeout = cmp.Or(c.GRPC.KeepaliveTimeout, d.GRPC.KeepaliveTimeout)
	return c
}

// GRPCServerOptions are the gRPC listener's bounds: streams per connection,
// the keepalive policy (the sidecar's pings, and how often clients may
// ping), idle connections, the handshake's time and the size of a call's
// metadata at the transport.
func GRPCServerOptions(c config.Server) []grpc.ServerOption {
	idle := c.IdleTimeout
	if idle <= 0 {
		idle = math.MaxInt64 // never
	}
	return []grpc.ServerOption{
		grpc.MaxConcurrentStreams(uint32(c.GRPC.MaxConcurrentStreams)),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{
			MinTime:             c.GRPC.KeepaliveMinTime,
			PermitWithoutStream: c.GRPC.KeepalivePermitWithoutStream,
		}),
		grpc.KeepaliveParams(keepalive.ServerParameters{
			MaxConnectionIdle: idle,
			Time:              c.GRPC.KeepaliveTime,
			Timeout:           c.GRPC.KeepaliveTimeout,
		}),
		grpc.ConnectionTimeout(c.ReadHeaderTimeout),
		// The transport resets a stream whose header list is larger
		// (INTERNAL at the client); the proxy answers INVALID_ARGUMENT
		// above server.max_header_bytes, so the transport's bound is well
		// beyond it, and advertised to clients.
		grpc.MaxHeaderListSize(uint32(max(4*int64(c.MaxHeaderBytes), 64<<10))),
	}
}

// GRPCCheck is the front door's check of a gRPC call, for the proxy
// (passthrough.GRPCProxy.Check): the size of its metadata (maxHeaderBytes
// > 0), then the management guard (guard nil: every management call
// refused).
func GRPCCheck(guard *Management, maxHeaderBytes int) func(method string, md metadata.MD) error {
	return func(method string, md metadata.MD) error {
		if maxHeaderBytes > 0 {
			if err := checkMetadataSize(md, maxHeaderBytes); err != nil {
				return err
			}
		}
		return guard.checkGRPC(method, md)
	}
}

// GRPCUnaryCheck returns the interceptor of the unary methods of the
// services registered on the sidecar's own gRPC server, beside the
// pass-through (react.Feedback): it gives them what the proxy gives every
// call it relays or serves through its seams, check first (GRPCCheck:
// the metadata's size, the management guard), and a panic in the handler
// answered as an INTERNAL status, never a crash. check nil checks nothing.
func GRPCUnaryCheck(check func(method string, md metadata.MD) error) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
		if check != nil {
			md, _ := metadata.FromIncomingContext(ctx)
			md = md.Copy()
			if err := check(info.FullMethod, md); err != nil {
				return nil, err
			}
			ctx = metadata.NewIncomingContext(ctx, md)
		}
		defer func() {
			if r := recover(); r != nil {
				resp, err = nil, status.Errorf(codes.Internal, "sidecar: handler of %s failed: %v", info.FullMethod, r)
			}
		}()
		return handler(ctx, req)
	}
}

// WrapHTTP wraps the HTTP handler with what every request passes
// first, outermost first: the write timeout, the header size bound (431),
// and the management guard (403, 401).
func WrapHTTP(h http.Handler, c config.Server, guard *Management, m *metrics.Metrics) http.Handler {
	h = guard.HTTP(h)
	h = limitHTTPHeaders(int(c.MaxHeaderBytes), m, h)
	return limitWrites(c.WriteTimeout, h)
}
