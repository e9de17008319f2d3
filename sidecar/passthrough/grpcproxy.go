package passthrough

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Service is the prefix of the full method names of Triton's inference
// service.
const Service = "/inference.GRPCInferenceService/"

// MethodStreamInfer is the full method name of Triton's streaming
// inference, a session whose requests come when they come.
const MethodStreamInfer = Service + "ModelStreamInfer"

// GRPCProxy relays every gRPC call it receives to an upstream server over
// one shared connection, message by message, without decoding anything.
// Before anything else it runs Check, the front door's checks of the call
// (the metadata's size, the guard of Triton's management API), and waits
// a bounded time for the first message of a unary call of Triton's
// service, which it then relays as one unary call (forwardUnary); other
// calls are streams copied both ways (forward). Set its fields before
// NewServer.
type GRPCProxy struct {
	// Check, when not nil, is consulted first with the call's full method
	// name and metadata: an error ends the call with it. It may edit md
	// (a token it consumed removed): the rest of the call, the upstream
	// call included, sees the metadata as Check left it.
	Check func(method string, md metadata.MD) error
	// ReadTimeout bounds the wait for the first message of a unary call
	// of Triton's service (0: no bound).
	ReadTimeout time.Duration
	// Log receives what the client is not told (the upstream's addresses
	// in its errors); NewGRPCProxy sets one that discards it.
	Log *slog.Logger
	// Private, when not nil, returns the keys that never reach Triton
	// beside ReACT's own (PrivateKeys), those in service at each call.
	Private func() *PrivateKeys

	conn      *grpc.ClientConn
	target    string
	intercept GRPCInterceptor
	redact    *Redactor
	logged    LogLimit
}

// proxyDesc describes every proxied call as bidirectional streaming: a unary
// call is the special case of one message each way, so one code path serves
// all methods, including ones the proxy has never heard of.
var proxyDesc = &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}

// upstreamCallOptions are the options of every upstream call: the raw codec
// and Triton's message size limits.
var upstreamCallOptions = []grpc.CallOption{
	grpc.ForceCodecV2(Codec{}),
	grpc.MaxCallRecvMsgSize(math.MaxInt32),
	grpc.MaxCallSendMsgSize(math.MaxInt32),
}

// OpenStream opens an upstream call of method on conn as the proxy opens
// every one: a bidirectional stream of Frames, with the raw codec and
// Triton's message size limits.
func OpenStream(ctx context.Context, conn *grpc.ClientConn, method string) (grpc.ClientStream, error) {
	return conn.NewStream(ctx, proxyDesc, method, upstreamCallOptions...)
}

// NewGRPCProxy returns a proxy to the server at the other end of conn.
// target names that server in error messages (the --triton-grpc address).
// intercept may be nil.
func NewGRPCProxy(conn *grpc.ClientConn, target string, intercept GRPCInterceptor) *GRPCProxy {
	return &GRPCProxy{conn: conn, target: target, intercept: intercept,
		redact: NewRedactor(target), Log: slog.New(slog.DiscardHandler)}
}

// NewServer returns a grpc.Server with no registered services that hands
// every call to the proxy, with the raw codec and message sizes up to
// math.MaxInt32, as Triton allows. Extra options are appended.
func (p *GRPCProxy) NewServer(opts ...grpc.ServerOption) *grpc.Server {
	base := []grpc.ServerOption{
		grpc.UnknownServiceHandler(p.handle),
		grpc.ForceServerCodecV2(Codec{}),
		grpc.MaxRecvMsgSize(math.MaxInt32),
		grpc.MaxSendMsgSize(math.MaxInt32),
	}
	return grpc.NewServer(append(base, opts...)...)
}

// handle is the grpc.StreamHandler for every method. Whatever the call
// ends with reaches the client without the upstream's addresses.
func (p *GRPCProxy) handle(srv any, ss grpc.ServerStream) error {
	method, ok := grpc.MethodFromServerStream(ss)
	if !ok {
		return status.Error(codes.Internal, "sidecar: no method name on the stream")
	}
	return p.scrub(method, p.serve(method, ss))
}

// serve checks a call and serves it: intercepted, or passed through.
func (p *GRPCProxy) serve(method string, ss grpc.ServerStream) error {
	md, _ := metadata.FromIncomingContext(ss.Context())
	if p.Check != nil {
		if err := p.Check(method, md); err != nil {
			return err
		}
	}
	// The check may have consumed the call's token: what follows sees the
	// metadata as it left it.
	ss = &contextStream{ServerStream: ss, ctx: metadata.NewIncomingContext(ss.Context(), md)}
	if strings.HasPrefix(method, Service) && method != MethodStreamInfer {
		// A unary call of Triton's service sends its request with its
		// headers; a call that sends none holds a goroutine, and Triton a
		// stream, for nothing. (A ModelStreamInfer stream is a session:
		// its requests come when they come; other services' calls pass as
		// they are, whoever speaks first.) Read, it goes to Triton as one
		// unary call, unless intercepted.
		first, err := recvFirst(ss, p.ReadTimeout)
		switch {
		case errors.Is(err, io.EOF):
			ss = &firstReplayed{ServerStream: ss, firstErr: io.EOF}
		case err != nil:
			return err
		default:
			if h := p.intercepted(method); h != nil {
				ss = &firstReplayed{ServerStream: ss, first: first}
				return serveIntercepted(h, ss, method, func(first *Frame) error { return p.forward(ss, method, first) })
			}
			return p.forwardUnary(ss, method, first)
		}
	}
	if h := p.intercepted(method); h != nil {
		return serveIntercepted(h, ss, method, func(first *Frame) error { return p.forward(ss, method, first) })
	}
	return p.forward(ss, method, nil)
}

// intercepted returns the interceptor's handler of method, nil when the
// method passes through.
func (p *GRPCProxy) intercepted(method string) GRPCHandler {
	if p.intercept == nil {
		return nil
	}
	return p.intercept(method)
}

// serveIntercepted runs an interceptor's handler and turns a panic in it
// into an INTERNAL status for that call: grpc-go does not recover handler
// panics, and the sidecar must never crash.
func serveIntercepted(h GRPCHandler, ss grpc.ServerStream, method string, pass func(*Frame) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = status.Errorf(codes.Internal, "sidecar: handler of %s failed: %v", method, r)
		}
	}()
	return h(ss, pass)
}

// forward relays one call upstream, starting with first when it is not nil
// (a message already read from the client). The upstream call's context
// derives from the client's, so the client's deadline and cancellation
// reach Triton; its outgoing metadata is the client's, less what grpc sets
// itself, ReACT's own keys and the private ones, with the peer appended to
// x-forwarded-for.
func (p *GRPCProxy) forward(ss grpc.ServerStream, method string, first *Frame) error {
	var private *PrivateKeys
	if p.Private != nil {
		private = p.Private()
	}
	ctx, cancel := context.WithCancel(UpstreamContext(ss.Context(), private))
	defer cancel()

	cs, err := OpenStream(ctx, p.conn, method)
	if err != nil {
		return UpstreamError(err)
	}

	fromClient := make(chan error, 1)
	go func() { fromClient <- toUpstream(ss, cs, first) }()
	fromUpstream := make(chan error, 1)
	go func() { fromUpstream <- p.toClient(cs, ss) }()

	for {
		select {
		case err := <-fromClient:
			if err != nil {
				// The client went away or sent something unreadable: stop the
				// upstream call too, and report the client side's status.
				// Wait for the other direction, so that nothing writes to the
				// client's stream once this handler has returned.
				cancel()
				<-fromUpstream
				return err
			}
			// The client half-closed; wait for the upstream's answer.
			fromClient = nil
		case err := <-fromUpstream:
			// Returning ends the client's call; the upstream's trailers and
			// status become its trailers and status.
			ss.SetTrailer(cs.Trailer())
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// forwardUnary relays a unary call of Triton's service whose request, req,
// was read: one upstream call, then its headers, answer and trailers to
// the client, as forward relays them, without forward's two goroutines
// that copy each direction of a stream while the other runs (the bulk of
// the proxy's calls are these). Whatever more the client sends is not
// read: a unary call has one request.
func (p *GRPCProxy) forwardUnary(ss grpc.ServerStream, method string, req *Frame) error {
	var private *PrivateKeys
	if p.Private != nil {
		private = p.Private()
	}
	var header, trailer metadata.MD
	opts := append(make([]grpc.CallOption, 0, len(upstreamCallOptions)+2), upstreamCallOptions...)
	opts = append(opts, grpc.Header(&header), grpc.Trailer(&trailer))
	resp := new(Frame)
	err := p.conn.Invoke(UpstreamContext(ss.Context(), private), method, req, resp, opts...)
	if header != nil {
		if err := ss.SendHeader(header); err != nil {
			return err
		}
	}
	ss.SetTrailer(trailer)
	switch {
	case err != nil && header == nil && len(trailer) == 0:
		// No answer from Triton at all (an answer has headers, or
		// trailers with at least their content type): the call never
		// reached it, or the connection went before it answered.
		return UpstreamError(err)
	case err != nil:
		// Triton's own status, unchanged.
		return err
	}
	return ss.SendMsg(resp)
}

// toUpstream copies the client's messages to the upstream call, first
// (when not nil) then the ones still to come, until the client half-closes
// (then it half-closes upstream and returns nil) or fails.
func toUpstream(ss grpc.ServerStream, cs grpc.ClientStream, first *Frame) error {
	for f := first; ; f = nil {
		if f == nil {
			f = new(Frame)
			if err := ss.RecvMsg(f); err != nil {
				if errors.Is(err, io.EOF) {
					return cs.CloseSend()
				}
				return err
			}
		}
		if err := cs.SendMsg(f); err != nil {
			if errors.Is(err, io.EOF) {
				// The upstream call ended; RecvMsg on it reports how.
				return nil
			}
			return err
		}
	}
}

// toClient copies the upstream's headers, then its messages, to the client.
// It returns io.EOF when the upstream call ended with OK, and otherwise the
// upstream's status as an error (UpstreamError's when the upstream never
// answered: no headers, no trailers).
func (p *GRPCProxy) toClient(cs grpc.ClientStream, ss grpc.ServerStream) error {
	md, err := cs.Header()
	if err != nil {
		// ClientStream allows an error here (grpc-go 1.85 reports a failure
		// before headers through RecvMsg instead); name the upstream in it.
		return UpstreamError(err)
	}
	if md != nil {
		if err := ss.SendHeader(md); err != nil {
			return err
		}
	}
	for {
		f := new(Frame)
		if err := cs.RecvMsg(f); err != nil {
			if md == nil && !errors.Is(err, io.EOF) && len(cs.Trailer()) == 0 {
				// No answer at all, as in forwardUnary.
				return UpstreamError(err)
			}
			return err
		}
		if err := ss.SendMsg(f); err != nil {
			return err
		}
	}
}

// UpstreamError is the error of a call to the upstream Triton as the
// sidecar gives it to its client: an UNAVAILABLE status raised by grpc
// itself (connection refused, reset, ...), or an error that is no status,
// says that the upstream Triton is unavailable; any other error is
// returned as it is, so statuses from Triton reach the client unchanged.
// The message may still name Triton's address: the caller removes it
// (Redactor), and logs it.
func UpstreamError(err error) error {
	st, ok := status.FromError(err)
	if !ok {
		return status.Errorf(codes.Unavailable, "sidecar: upstream Triton: %v", err)
	}
	if st.Code() != codes.Unavailable {
		return err
	}
	return status.Errorf(codes.Unavailable, "sidecar: upstream Triton: %s", st.Message())
}

// scrub returns the status a call ends with as the client may see it:
// without the upstream's addresses, which the log gets instead.
func (p *GRPCProxy) scrub(method string, err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	msg := p.redact.Redact(st.Message())
	if msg == st.Message() {
		return err
	}
	p.logged.Do(func() {
		p.Log.Warn("upstream Triton", "method", method, "code", st.Code().String(), "error", st.Message(), "triton", p.target)
	})
	sp := st.Proto()
	sp.Message = msg
	return status.FromProto(sp).Err()
}

// contextStream is a server stream with another context.
type contextStream struct {
	grpc.ServerStream
	ctx context.Context
}

// Context implements grpc.ServerStream.
func (s *contextStream) Context() context.Context { return s.ctx }
