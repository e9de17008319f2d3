package sidecartest

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/sidecar/passthrough"
)

// InvokeRaw makes a unary call with the raw codec.
func InvokeRaw(ctx context.Context, conn *grpc.ClientConn, method string) error {
	return conn.Invoke(ctx, method, &passthrough.Frame{}, &passthrough.Frame{}, grpc.ForceCodecV2(passthrough.Codec{}))
}

// NewRawStream opens a call of method on conn as a bidirectional stream
// of passthrough.Frames (the raw codec), opts after the codec.
func NewRawStream(ctx context.Context, conn *grpc.ClientConn, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	desc := &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}
	return conn.NewStream(ctx, desc, method, append([]grpc.CallOption{grpc.ForceCodecV2(passthrough.Codec{})}, opts...)...)
}

// RawUpstream is an upstream that knows no services either: it answers every
// method with its raw codec, by the method's name.
//
//	/x.Unknown/Echo      one request, one response: the request reversed
//	  (and Mine)         (the same);
//	                     headers: the method, and the metadata it received
//	                     under "seen-<key>"; trailer "t: done"
//	/x.Unknown/Chat      bidi: answers each message "re:"+message, in turn
//	/x.Unknown/Fail      fails with FAILED_PRECONDITION and a trailer
//	/x.Unknown/Deadline  answers the deadline it sees (RFC 3339, or "none")
//	/x.Unknown/Hang      waits for its context to end, then signals cancelled
//	/x.Unknown/Busy      fails with UNAVAILABLE (as Triton may) and a trailer
//	/x.Unknown/BusyBare  the same without the trailer
//	/x.Unknown/SentThenBusy  reads the request, sends its headers
//	                     ("stage: sent"), then fails as Busy does
//
// and the same under Triton's service name (passthrough.Service + "Echo",
// ...), which the proxy relays as unary calls of Triton's service.
type RawUpstream struct {
	Cancelled chan struct{}
}

// Handle is the upstream's grpc.StreamHandler, for every method.
func (u *RawUpstream) Handle(_ any, ss grpc.ServerStream) error {
	method, _ := grpc.MethodFromServerStream(ss)
	ctx := ss.Context()
	name := method
	if m, ok := strings.CutPrefix(method, passthrough.Service); ok {
		name = "/x.Unknown/" + m
	}
	switch name {
	case "/x.Unknown/Echo", "/x.Unknown/Mine":
		in, _ := metadata.FromIncomingContext(ctx)
		hdr := metadata.Pairs("method", method)
		for k, v := range in {
			if !strings.HasPrefix(k, ":") { // the upstream's own pseudo-headers
				hdr["seen-"+k] = v
			}
		}
		if err := ss.SendHeader(hdr); err != nil {
			return err
		}
		var f passthrough.Frame
		if err := ss.RecvMsg(&f); err != nil {
			return err
		}
		out := slices.Clone(f.Payload)
		slices.Reverse(out)
		ss.SetTrailer(metadata.Pairs("t", "done"))
		return ss.SendMsg(&passthrough.Frame{Payload: out})
	case "/x.Unknown/Chat":
		for {
			var f passthrough.Frame
			if err := ss.RecvMsg(&f); errors.Is(err, io.EOF) {
				ss.SetTrailer(metadata.Pairs("chat", "over"))
				return nil
			} else if err != nil {
				return err
			}
			if err := ss.SendMsg(&passthrough.Frame{Payload: append([]byte("re:"), f.Payload...)}); err != nil {
				return err
			}
		}
	case "/x.Unknown/Fail":
		ss.SetTrailer(metadata.Pairs("why", "because"))
		return status.Error(codes.FailedPrecondition, "model  \"m\" is not ready: ünïcode & spaces")
	case "/x.Unknown/Busy":
		ss.SetTrailer(metadata.Pairs("why", "busy"))
		return status.Error(codes.Unavailable, "model \"m\" is busy")
	case "/x.Unknown/BusyBare":
		return status.Error(codes.Unavailable, "model \"m\" is busy")
	case "/x.Unknown/SentThenBusy":
		if err := ss.RecvMsg(&passthrough.Frame{}); err != nil {
			return err
		}
		if err := ss.SendHeader(metadata.Pairs("stage", "sent")); err != nil {
			return err
		}
		ss.SetTrailer(metadata.Pairs("why", "busy"))
		return status.Error(codes.Unavailable, "model \"m\" is busy")
	case "/x.Unknown/Deadline":
		var f passthrough.Frame
		if err := ss.RecvMsg(&f); err != nil {
			return err
		}
		answer := "none"
		if d, ok := ctx.Deadline(); ok {
			answer = d.UTC().Format(time.RFC3339Nano)
		}
		return ss.SendMsg(&passthrough.Frame{Payload: []byte(answer)})
	case "/x.Unknown/Hang":
		if err := ss.SendHeader(metadata.Pairs("hanging", "yes")); err != nil {
			return err
		}
		<-ctx.Done()
		close(u.Cancelled)
		return ctx.Err()
	}
	return status.Errorf(codes.Unimplemented, "no method %s", method)
}
