package passthrough_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/internal/testutil"
	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/internal/sidecartest"
	"github.com/mergectl/react-triton/sidecar/passthrough"
	"github.com/mergectl/react-triton/sidecar/server"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

func startRaw(t *testing.T) (*server.Server, *sidecartest.RawUpstream) {
	t.Helper()
	return startRawWith(t, server.Config{})
}

// startRawWith is startRaw with the sidecar's configuration cfg (its
// upstream set here).
func startRawWith(t *testing.T, cfg server.Config) (*server.Server, *sidecartest.RawUpstream) {
	t.Helper()
	u := &sidecartest.RawUpstream{Cancelled: make(chan struct{})}
	cfg.TritonGRPC = sidecartest.StartUpstreamGRPC(t, func(*grpc.Server) {}, grpc.UnknownServiceHandler(u.Handle), grpc.ForceServerCodecV2(passthrough.Codec{}),
		grpc.MaxRecvMsgSize(1<<30))
	return sidecartest.StartSidecar(t, cfg), u
}

// unaryServices are the two ways the proxy relays a unary call: a method
// it knows nothing of, as a stream copied both ways, and a method of
// Triton's service, whose request it reads first (server.read_timeout) and
// relays as one unary call upstream. The tests of unary calls run both.
var unaryServices = []struct{ name, prefix string }{
	{"unknown", "/x.Unknown/"},
	{"triton", passthrough.Service},
}

func TestGRPCUnaryWithMetadata(t *testing.T) {
	s, _ := startRaw(t)
	conn := sidecartest.Dial(t, s.GRPCAddr().String())
	for _, svc := range unaryServices {
		method := svc.prefix + "Echo"
		// Not a protobuf message at all: the proxy must not care.
		payload := []byte{0xff, 0x00, 0x01, 0xfe, 'a', 'b'}
		ctx := metadata.AppendToOutgoingContext(context.Background(),
			"x-user", "alice", "x-multi", "one", "x-multi", "two", "trace-bin", string([]byte{0, 1, 2, 0xff}))
		var hdr, tlr metadata.MD
		var out passthrough.Frame
		err := conn.Invoke(ctx, method, &passthrough.Frame{Payload: payload}, &out,
			grpc.ForceCodecV2(passthrough.Codec{}), grpc.Header(&hdr), grpc.Trailer(&tlr))
		if err != nil {
			t.Fatalf("%s: %v", svc.name, err)
		}
		if want := []byte{'b', 'a', 0xfe, 0x01, 0x00, 0xff}; !bytes.Equal(out.Payload, want) {
			t.Errorf("%s: response %v, want %v", svc.name, out.Payload, want)
		}
		for k, want := range map[string][]string{
			"method":         {method},
			"seen-x-user":    {"alice"},
			"seen-x-multi":   {"one", "two"},
			"seen-trace-bin": {string([]byte{0, 1, 2, 0xff})},
		} {
			if got := hdr.Get(k); !slices.Equal(got, want) {
				t.Errorf("%s: header %s = %q, want %q", svc.name, k, got, want)
			}
		}
		if got := hdr.Get("seen-user-agent"); len(got) != 1 {
			// grpc-go sets its own user agent upstream; the client's is not duplicated.
			t.Errorf("%s: upstream saw user-agent %q, want exactly one", svc.name, got)
		}
		if got := tlr.Get("t"); !slices.Equal(got, []string{"done"}) {
			t.Errorf("%s: trailer t = %q, want [done]", svc.name, got)
		}
	}
}

// TestGRPCPrivateKeys: the private keys in service at each call, in any
// case, never reach Triton; without them the same key does.
func TestGRPCPrivateKeys(t *testing.T) {
	var private atomic.Pointer[passthrough.PrivateKeys]
	s, _ := startRawWith(t, server.Config{Private: private.Load})
	conn := sidecartest.Dial(t, s.GRPCAddr().String())
	for _, svc := range unaryServices {
		for _, keys := range []*passthrough.PrivateKeys{nil, passthrough.NewPrivateKeys("X-No-Sample"), nil} {
			private.Store(keys)
			ctx := metadata.AppendToOutgoingContext(context.Background(), "x-no-sample", "1", "x-user", "alice")
			var hdr metadata.MD
			if err := conn.Invoke(ctx, svc.prefix+"Echo", &passthrough.Frame{Payload: []byte{1}}, &passthrough.Frame{},
				grpc.ForceCodecV2(passthrough.Codec{}), grpc.Header(&hdr)); err != nil {
				t.Fatal(err)
			}
			if got := hdr.Get("seen-x-no-sample"); (len(got) == 1) != (keys == nil) || !slices.Equal(hdr.Get("seen-x-user"), []string{"alice"}) {
				t.Errorf("%s, private keys %v: Triton saw x-no-sample %q, x-user %q", svc.name, keys, got, hdr.Get("seen-x-user"))
			}
		}
	}
}

func TestGRPCBidiStreamAndLargeMessages(t *testing.T) {
	s, _ := startRaw(t)
	conn := sidecartest.Dial(t, s.GRPCAddr().String())
	stream, err := sidecartest.NewRawStream(context.Background(), conn, "/x.Unknown/Chat",
		grpc.MaxCallRecvMsgSize(1<<30), grpc.MaxCallSendMsgSize(1<<30))
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte{0xab, 0xcd, 0x00}, 3<<20) // 9 MiB, over grpc's 4 MiB default
	msgs := [][]byte{[]byte("one"), {}, big, []byte("last")}
	for _, m := range msgs {
		// Lock-step: each answer must arrive before the next request is sent.
		if err := stream.SendMsg(&passthrough.Frame{Payload: m}); err != nil {
			t.Fatal(err)
		}
		var f passthrough.Frame
		if err := stream.RecvMsg(&f); err != nil {
			t.Fatal(err)
		}
		if want := append([]byte("re:"), m...); !bytes.Equal(f.Payload, want) {
			t.Fatalf("answer of %d bytes differs from the %d expected", len(f.Payload), len(want))
		}
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if err := stream.RecvMsg(&passthrough.Frame{}); !errors.Is(err, io.EOF) {
		t.Fatalf("after CloseSend: %v, want io.EOF", err)
	}
	if got := stream.Trailer().Get("chat"); !slices.Equal(got, []string{"over"}) {
		t.Errorf("trailer chat = %q", got)
	}
}

// TestGRPCStatusPropagation: the upstream's status, message and trailers
// reach the client unchanged, UNAVAILABLE from the upstream itself too
// (only the proxy's own failure to reach it is reworded).
func TestGRPCStatusPropagation(t *testing.T) {
	s, _ := startRaw(t)
	conn := sidecartest.Dial(t, s.GRPCAddr().String())
	for _, svc := range unaryServices {
		for _, tc := range []struct {
			method, msg, why string
			code             codes.Code
		}{
			{"Fail", "model  \"m\" is not ready: ünïcode & spaces", "because", codes.FailedPrecondition},
			{"Busy", "model \"m\" is busy", "busy", codes.Unavailable},
			{"BusyBare", "model \"m\" is busy", "", codes.Unavailable},
		} {
			var tlr metadata.MD
			err := conn.Invoke(context.Background(), svc.prefix+tc.method, &passthrough.Frame{}, &passthrough.Frame{}, grpc.ForceCodecV2(passthrough.Codec{}), grpc.Trailer(&tlr))
			st := status.Convert(err)
			if st.Code() != tc.code || st.Message() != tc.msg {
				t.Errorf("%s %s: status %v %q, want %v %q", svc.name, tc.method, st.Code(), st.Message(), tc.code, tc.msg)
			}
			if got := tlr.Get("why"); tc.why != "" && !slices.Equal(got, []string{tc.why}) || tc.why == "" && got != nil {
				t.Errorf("%s %s: trailer why = %q", svc.name, tc.method, got)
			}
		}
		// A method the upstream does not know: its UNIMPLEMENTED, not the proxy's.
		method := svc.prefix + "Nothing"
		err := conn.Invoke(context.Background(), method, &passthrough.Frame{}, &passthrough.Frame{}, grpc.ForceCodecV2(passthrough.Codec{}))
		if st := status.Convert(err); st.Code() != codes.Unimplemented || st.Message() != "no method "+method {
			t.Errorf("%s: status %v %q", svc.name, st.Code(), st.Message())
		}
	}
}

func TestGRPCDeadlinePropagation(t *testing.T) {
	s, _ := startRaw(t)
	conn := sidecartest.Dial(t, s.GRPCAddr().String())
	for _, svc := range unaryServices {
		t.Run(svc.name, func(t *testing.T) { testDeadline(t, conn, svc.prefix+"Deadline") })
	}
}

// testDeadline checks that the deadline of a call of method reaches the
// upstream, and that no deadline reaches it as none.
func testDeadline(t *testing.T, conn *grpc.ClientConn, method string) {
	call := func(ctx context.Context) string {
		t.Helper()
		var out passthrough.Frame
		if err := conn.Invoke(ctx, method, &passthrough.Frame{}, &out, grpc.ForceCodecV2(passthrough.Codec{})); err != nil {
			t.Fatal(err)
		}
		return string(out.Payload)
	}
	if got := call(context.Background()); got != "none" {
		t.Errorf("without a deadline the upstream saw %q", got)
	}
	deadline := time.Now().Add(time.Hour)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	got, err := time.Parse(time.RFC3339Nano, call(ctx))
	if err != nil {
		t.Fatal(err)
	}
	// The deadline travels as a timeout rounded up to the millisecond at each
	// hop, so it may come out a little later; an hour of slack the other way
	// makes the check independent of the machine's speed.
	if got.After(deadline.Add(time.Second)) || got.Before(deadline.Add(-time.Hour)) {
		t.Errorf("upstream deadline %v, client's %v", got, deadline)
	}
}

func TestGRPCCancellationReachesUpstream(t *testing.T) {
	s, u := startRaw(t)
	conn := sidecartest.Dial(t, s.GRPCAddr().String())
	ctx, cancel := context.WithCancel(context.Background())
	stream, err := sidecartest.NewRawStream(ctx, conn, "/x.Unknown/Hang")
	if err != nil {
		t.Fatal(err)
	}
	if hdr, err := stream.Header(); err != nil || hdr.Get("hanging") == nil {
		t.Fatalf("header %v, %v", hdr, err)
	}
	cancel()
	select {
	case <-u.Cancelled:
	case <-time.After(time.Minute):
		t.Fatal("the upstream call was not cancelled")
	}
}

// TestGRPCUnaryCancellationReachesUpstream: a client that gives up on a
// unary call of Triton's service cancels the upstream call too.
func TestGRPCUnaryCancellationReachesUpstream(t *testing.T) {
	s, u := startRaw(t)
	conn := sidecartest.Dial(t, s.GRPCAddr().String())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sidecartest.InvokeRaw(ctx, conn, passthrough.Service+"Hang") }()
	time.Sleep(50 * time.Millisecond) // the call reaches the upstream, or cancels before
	cancel()
	select {
	case <-u.Cancelled:
	case <-time.After(time.Minute):
		t.Fatal("the upstream call was not cancelled")
	}
	if err := <-done; status.Code(err) != codes.Canceled {
		t.Errorf("client's call ended with %v, want CANCELED", err)
	}
}

func TestGRPCUpstreamDown(t *testing.T) {
	down := testutil.ClosedAddr(t)
	downHost, _, _ := net.SplitHostPort(down)
	s := sidecartest.StartSidecar(t, server.Config{TritonGRPC: down})
	conn := sidecartest.Dial(t, s.GRPCAddr().String())
	for _, method := range []string{"/x.Unknown/Echo", tritonpb.GRPCInferenceService_ServerLive_FullMethodName} {
		err := conn.Invoke(context.Background(), method, &passthrough.Frame{}, &passthrough.Frame{}, grpc.ForceCodecV2(passthrough.Codec{}))
		st := status.Convert(err)
		// The client learns that Triton is away, not where it is.
		if st.Code() != codes.Unavailable || !strings.Contains(st.Message(), "upstream Triton") || strings.Contains(st.Message(), downHost) {
			t.Errorf("%s: status %v %q, want UNAVAILABLE without the address %s", method, st.Code(), st.Message(), down)
		}
	}
}

// echoUpstream answers two of Triton's RPCs by echoing (not a fake Triton: that
// is package faketriton), typed, to show that generated
// clients work through the proxy unchanged.
type echoUpstream struct {
	tritonpb.UnimplementedGRPCInferenceServiceServer
}

func (echoUpstream) ModelInfer(_ context.Context, r *tritonpb.ModelInferRequest) (*tritonpb.ModelInferResponse, error) {
	return &tritonpb.ModelInferResponse{ModelName: r.GetModelName(), Id: r.GetId(), RawOutputContents: r.GetRawInputContents()}, nil
}

func (echoUpstream) ModelStreamInfer(s grpc.BidiStreamingServer[tritonpb.ModelInferRequest, tritonpb.ModelStreamInferResponse]) error {
	for {
		r, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		// Two responses per request, as a decoupled model may send.
		for i := range 2 {
			resp := &tritonpb.ModelInferResponse{ModelName: r.GetModelName(), Id: r.GetId() + "/" + string(rune('a'+i))}
			if err := s.Send(&tritonpb.ModelStreamInferResponse{InferResponse: resp}); err != nil {
				return err
			}
		}
	}
}

func TestGRPCTypedTritonAndHealth(t *testing.T) {
	up := sidecartest.StartUpstreamGRPC(t, func(s *grpc.Server) {
		tritonpb.RegisterGRPCInferenceServiceServer(s, echoUpstream{})
		hs := health.NewServer()
		hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
		healthpb.RegisterHealthServer(s, hs)
	})
	s := sidecartest.StartSidecar(t, server.Config{TritonGRPC: up})
	conn := sidecartest.Dial(t, s.GRPCAddr().String())
	ctx := context.Background()

	hc, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil || hc.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health Check = %v, %v", hc, err)
	}

	rpc := tritonpb.NewGRPCInferenceServiceClient(conn)
	raw := [][]byte{{1, 2, 3, 4}, {0xff}}
	resp, err := rpc.ModelInfer(ctx, &tritonpb.ModelInferRequest{ModelName: "m", Id: "7", RawInputContents: raw})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetModelName() != "m" || resp.GetId() != "7" || !slices.EqualFunc(resp.GetRawOutputContents(), raw, bytes.Equal) {
		t.Errorf("ModelInfer = %v", resp)
	}
	if _, err := rpc.ModelConfig(ctx, &tritonpb.ModelConfigRequest{Name: "m"}); status.Code(err) != codes.Unimplemented {
		t.Errorf("ModelConfig: %v, want the upstream's UNIMPLEMENTED", err)
	}

	stream, err := rpc.ModelStreamInfer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"x", "y"} {
		if err := stream.Send(&tritonpb.ModelInferRequest{ModelName: "m", Id: id}); err != nil {
			t.Fatal(err)
		}
		for _, suffix := range []string{"/a", "/b"} {
			r, err := stream.Recv()
			if err != nil {
				t.Fatal(err)
			}
			if got := r.GetInferResponse().GetId(); got != id+suffix {
				t.Errorf("stream response id %q, want %q", got, id+suffix)
			}
		}
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); !errors.Is(err, io.EOF) {
		t.Errorf("after CloseSend: %v, want io.EOF", err)
	}
}

func TestGRPCInterceptorSeam(t *testing.T) {
	u := &sidecartest.RawUpstream{Cancelled: make(chan struct{})}
	up := sidecartest.StartUpstreamGRPC(t, func(*grpc.Server) {}, grpc.UnknownServiceHandler(u.Handle), grpc.ForceServerCodecV2(passthrough.Codec{}))
	var consulted []string
	s := sidecartest.StartSidecar(t, server.Config{TritonGRPC: up, InterceptGRPC: func(method string) passthrough.GRPCHandler {
		consulted = append(consulted, method)
		if method != "/x.Unknown/Mine" {
			return nil
		}
		// Serves messages that start with "me", passes the others on,
		// after having read them.
		return func(ss grpc.ServerStream, pass func(*passthrough.Frame) error) error {
			f := new(passthrough.Frame)
			if err := ss.RecvMsg(f); err != nil {
				return err
			}
			if !bytes.HasPrefix(f.Payload, []byte("me")) {
				return pass(f)
			}
			return ss.SendMsg(&passthrough.Frame{Payload: append([]byte("sidecar:"), f.Payload...)})
		}
	}})
	conn := sidecartest.Dial(t, s.GRPCAddr().String())
	var out passthrough.Frame
	if err := conn.Invoke(context.Background(), "/x.Unknown/Mine", &passthrough.Frame{Payload: []byte("me hi")}, &out, grpc.ForceCodecV2(passthrough.Codec{})); err != nil {
		t.Fatal(err)
	}
	if string(out.Payload) != "sidecar:me hi" {
		t.Errorf("intercepted answer %q", out.Payload)
	}
	// Read by the handler, then passed on: the upstream (which reverses
	// the bytes of the methods it does not know) answers.
	if err := conn.Invoke(context.Background(), "/x.Unknown/Mine", &passthrough.Frame{Payload: []byte("you")}, &out, grpc.ForceCodecV2(passthrough.Codec{})); err != nil {
		t.Fatal(err)
	}
	if string(out.Payload) != "uoy" {
		t.Errorf("passed-on answer %q, want the upstream's \"uoy\"", out.Payload)
	}
	if err := conn.Invoke(context.Background(), "/x.Unknown/Echo", &passthrough.Frame{Payload: []byte("ab")}, &out, grpc.ForceCodecV2(passthrough.Codec{})); err != nil {
		t.Fatal(err)
	}
	if string(out.Payload) != "ba" {
		t.Errorf("passed-through answer %q", out.Payload)
	}
	if want := []string{"/x.Unknown/Mine", "/x.Unknown/Mine", "/x.Unknown/Echo"}; !slices.Equal(consulted, want) {
		t.Errorf("consulted for %q, want %q", consulted, want)
	}
}

// TestGRPCCompressedRequests checks that clients that compress their
// messages, as tritonclient can with gzip or deflate, pass through, both
// ways the proxy relays a unary call: the proxy must decode each message
// to relay it.
func TestGRPCCompressedRequests(t *testing.T) {
	s, _ := startRaw(t)
	conn := sidecartest.Dial(t, s.GRPCAddr().String())
	payload := bytes.Repeat([]byte("tensor bytes "), 1000)
	want := slices.Clone(payload)
	slices.Reverse(want)
	for _, svc := range unaryServices {
		for _, name := range []string{"gzip", "deflate"} {
			var out passthrough.Frame
			err := conn.Invoke(context.Background(), svc.prefix+"Echo", &passthrough.Frame{Payload: payload}, &out,
				grpc.ForceCodecV2(passthrough.Codec{}), grpc.UseCompressor(name))
			if err != nil {
				t.Errorf("%s, %s: %v", svc.name, name, err)
				continue
			}
			if !bytes.Equal(out.Payload, want) {
				t.Errorf("%s, %s: response of %d bytes, want the %d request bytes reversed", svc.name, name, len(out.Payload), len(payload))
			}
		}
	}
}

// TestGRPCInterceptorPanic checks that a failing interceptor handler costs
// its call an INTERNAL status, not the process.
func TestGRPCInterceptorPanic(t *testing.T) {
	up := sidecartest.StartUpstreamGRPC(t, func(*grpc.Server) {}, grpc.UnknownServiceHandler((&sidecartest.RawUpstream{Cancelled: make(chan struct{})}).Handle), grpc.ForceServerCodecV2(passthrough.Codec{}))
	s := sidecartest.StartSidecar(t, server.Config{TritonGRPC: up, InterceptGRPC: func(method string) passthrough.GRPCHandler {
		if method != "/x.Unknown/Boom" {
			return nil
		}
		return func(grpc.ServerStream, func(*passthrough.Frame) error) error { panic("boom") }
	}})
	conn := sidecartest.Dial(t, s.GRPCAddr().String())
	err := conn.Invoke(context.Background(), "/x.Unknown/Boom", &passthrough.Frame{}, &passthrough.Frame{}, grpc.ForceCodecV2(passthrough.Codec{}))
	if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "handler of /x.Unknown/Boom failed: boom") {
		t.Errorf("panicking handler: %v, want INTERNAL naming the method", err)
	}
	var out passthrough.Frame
	if err := conn.Invoke(context.Background(), "/x.Unknown/Echo", &passthrough.Frame{Payload: []byte("ok")}, &out, grpc.ForceCodecV2(passthrough.Codec{})); err != nil {
		t.Errorf("the sidecar stopped serving after a panic: %v", err)
	}
}

// TestGRPCMaxRecvMsgSize: Config.MaxRecvMsgSize bounds every message the
// sidecar receives, pass-through included, after decompression: a small
// gzip message that expands beyond it is refused with RESOURCE_EXHAUSTED
// (grpc stops decompressing at the limit), and nothing reaches the upstream.
func TestGRPCMaxRecvMsgSize(t *testing.T) {
	u := &sidecartest.RawUpstream{Cancelled: make(chan struct{})}
	up := sidecartest.StartUpstreamGRPC(t, func(*grpc.Server) {}, grpc.UnknownServiceHandler(u.Handle), grpc.ForceServerCodecV2(passthrough.Codec{}))
	s := sidecartest.StartSidecar(t, server.Config{TritonGRPC: up, MaxRecvMsgSize: 4096})
	conn := sidecartest.Dial(t, s.GRPCAddr().String())
	var out passthrough.Frame
	bomb := make([]byte, 1<<20) // 1 MiB of zeros: about 1 KiB gzipped
	err := conn.Invoke(context.Background(), "/x.Unknown/Echo", &passthrough.Frame{Payload: bomb}, &out,
		grpc.ForceCodecV2(passthrough.Codec{}), grpc.UseCompressor("gzip"))
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("1 MiB (gzipped) with a 4 KiB limit: %v, want RESOURCE_EXHAUSTED", err)
	}
	if err := conn.Invoke(context.Background(), "/x.Unknown/Echo", &passthrough.Frame{Payload: make([]byte, 1000)}, &out,
		grpc.ForceCodecV2(passthrough.Codec{})); err != nil || len(out.Payload) != 1000 {
		t.Errorf("1000 bytes under the limit: %v (%d bytes back)", err, len(out.Payload))
	}
}

// TestUpstreamError: an UNAVAILABLE status raised by grpc, or an error
// that is no status, says that the upstream Triton is unavailable; any
// other status, Triton's own, is returned as it is.
func TestUpstreamError(t *testing.T) {
	notFound := status.Error(codes.NotFound, "unknown model x")
	for _, tc := range []struct {
		name string
		err  error
		code codes.Code
		msg  string
	}{
		{"unavailable", status.Error(codes.Unavailable, "connection refused"), codes.Unavailable, "sidecar: upstream Triton: connection refused"},
		{"no status", errors.New("connection reset"), codes.Unavailable, "sidecar: upstream Triton: connection reset"},
		{"Triton's status", notFound, codes.NotFound, "unknown model x"},
	} {
		st := status.Convert(passthrough.UpstreamError(tc.err))
		if st.Code() != tc.code || st.Message() != tc.msg {
			t.Errorf("%s: %v %q, want %v %q", tc.name, st.Code(), st.Message(), tc.code, tc.msg)
		}
	}
	if err := passthrough.UpstreamError(notFound); err != notFound {
		t.Errorf("Triton's status became %v, want it as it is", err)
	}
}

// TestGRPCHeadersThenError: an upstream that sends its headers, then
// fails (UNAVAILABLE, its own: a model busy), gets both to the client as
// it sent them: the headers, its status and message unchanged, its
// trailers.
func TestGRPCHeadersThenError(t *testing.T) {
	s, _ := startRaw(t)
	conn := sidecartest.Dial(t, s.GRPCAddr().String())
	for _, svc := range unaryServices {
		var hdr, tlr metadata.MD
		err := conn.Invoke(context.Background(), svc.prefix+"SentThenBusy", &passthrough.Frame{Payload: []byte{1}}, &passthrough.Frame{},
			grpc.ForceCodecV2(passthrough.Codec{}), grpc.Header(&hdr), grpc.Trailer(&tlr))
		if st := status.Convert(err); st.Code() != codes.Unavailable || st.Message() != "model \"m\" is busy" {
			t.Errorf("%s: status %v %q, want the upstream's UNAVAILABLE as it is", svc.name, st.Code(), st.Message())
		}
		if got := hdr.Get("stage"); !slices.Equal(got, []string{"sent"}) {
			t.Errorf("%s: header stage = %q, want [sent]", svc.name, got)
		}
		if got := tlr.Get("why"); !slices.Equal(got, []string{"busy"}) {
			t.Errorf("%s: trailer why = %q, want [busy]", svc.name, got)
		}
	}
}

// TestGRPCUnaryLargeMessages: a unary call's request and answer may each
// be over grpc's 4 MiB default, as Triton allows, both ways the proxy
// relays it.
func TestGRPCUnaryLargeMessages(t *testing.T) {
	s, _ := startRaw(t)
	conn := sidecartest.Dial(t, s.GRPCAddr().String())
	big := bytes.Repeat([]byte{0xab, 0xcd, 0x00}, 3<<20) // 9 MiB
	want := slices.Clone(big)
	slices.Reverse(want)
	for _, svc := range unaryServices {
		var out passthrough.Frame
		err := conn.Invoke(context.Background(), svc.prefix+"Echo", &passthrough.Frame{Payload: big}, &out,
			grpc.ForceCodecV2(passthrough.Codec{}), grpc.MaxCallRecvMsgSize(1<<30), grpc.MaxCallSendMsgSize(1<<30))
		if err != nil {
			t.Errorf("%s: %v", svc.name, err)
			continue
		}
		if !bytes.Equal(out.Payload, want) {
			t.Errorf("%s: answer of %d bytes, want the %d request bytes reversed", svc.name, len(out.Payload), len(big))
		}
	}
}

// TestGRPCUnaryReadTimeoutOff: with server.read_timeout 0 (no bound on
// the request's wait), a unary call of Triton's service is relayed as
// with one: its answer, its headers (the client's metadata as Triton saw
// it) and trailers.
func TestGRPCUnaryReadTimeoutOff(t *testing.T) {
	lim := config.Default().Server
	lim.ReadTimeout = 0
	s, _ := startRawWith(t, server.Config{Server: lim})
	conn := sidecartest.Dial(t, s.GRPCAddr().String())
	for _, svc := range unaryServices {
		ctx := metadata.AppendToOutgoingContext(context.Background(), "x-user", "alice")
		var hdr, tlr metadata.MD
		var out passthrough.Frame
		if err := conn.Invoke(ctx, svc.prefix+"Echo", &passthrough.Frame{Payload: []byte("ab")}, &out,
			grpc.ForceCodecV2(passthrough.Codec{}), grpc.Header(&hdr), grpc.Trailer(&tlr)); err != nil {
			t.Fatalf("%s: %v", svc.name, err)
		}
		if string(out.Payload) != "ba" || !slices.Equal(hdr.Get("seen-x-user"), []string{"alice"}) || !slices.Equal(tlr.Get("t"), []string{"done"}) {
			t.Errorf("%s: answer %q, header seen-x-user %q, trailer t %q", svc.name, out.Payload, hdr.Get("seen-x-user"), tlr.Get("t"))
		}
	}
}

// dropListener is a listener whose accepted connections drop closes: an
// upstream whose connection goes in the middle of a call.
type dropListener struct {
	net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

// Accept implements net.Listener.
func (l *dropListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.mu.Lock()
		l.conns = append(l.conns, c)
		l.mu.Unlock()
	}
	return c, err
}

// drop closes every connection accepted so far.
func (l *dropListener) drop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		c.Close()
	}
	l.conns = nil
}

// TestGRPCUpstreamDropsCall: an upstream whose connection closes in the
// middle of a call, before its answer (Drop) or after its headers
// (SentThenDrop), ends the client's call at once with UNAVAILABLE, without
// the upstream's address, both ways the proxy relays it; before any answer
// it says that Triton is unavailable, as when it cannot be reached (after
// its headers the status may be Triton's own, and is left as it is); the
// next call, on a new connection, is served.
func TestGRPCUpstreamDropsCall(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dl := &dropListener{Listener: lis}
	raw := &sidecartest.RawUpstream{Cancelled: make(chan struct{})}
	up := grpc.NewServer(grpc.ForceServerCodecV2(passthrough.Codec{}), grpc.UnknownServiceHandler(func(srv any, ss grpc.ServerStream) error {
		method, _ := grpc.MethodFromServerStream(ss)
		switch {
		case strings.HasSuffix(method, "/Drop"), strings.HasSuffix(method, "/SentThenDrop"):
			if err := ss.RecvMsg(&passthrough.Frame{}); err != nil {
				return err
			}
			if strings.HasSuffix(method, "/SentThenDrop") {
				if err := ss.SendHeader(metadata.Pairs("stage", "sent")); err != nil {
					return err
				}
				time.Sleep(50 * time.Millisecond) // the headers on the wire first
			}
			dl.drop()
			<-ss.Context().Done()
			return ss.Context().Err()
		}
		return raw.Handle(srv, ss)
	}))
	go up.Serve(dl)
	t.Cleanup(up.Stop)
	addr := lis.Addr().String()
	host, _, _ := net.SplitHostPort(addr)
	s := sidecartest.StartSidecar(t, server.Config{TritonGRPC: addr})
	conn := sidecartest.Dial(t, s.GRPCAddr().String())
	for _, svc := range unaryServices {
		for _, method := range []string{"Drop", "SentThenDrop"} {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err := conn.Invoke(ctx, svc.prefix+method, &passthrough.Frame{Payload: []byte{1}}, &passthrough.Frame{}, grpc.ForceCodecV2(passthrough.Codec{}))
			cancel()
			st := status.Convert(err)
			t.Logf("%s %s: %v %q", svc.name, method, st.Code(), st.Message())
			if st.Code() != codes.Unavailable || strings.Contains(st.Message(), addr) || strings.Contains(st.Message(), host+":") {
				t.Errorf("%s %s: status %v %q, want UNAVAILABLE without the upstream's address", svc.name, method, st.Code(), st.Message())
			}
			if unanswered := method == "Drop"; strings.HasPrefix(st.Message(), "sidecar: upstream Triton: ") != unanswered {
				t.Errorf("%s %s: %q; want it to say that Triton is unavailable exactly when it never answered (%v)", svc.name, method, st.Message(), unanswered)
			}
			var out passthrough.Frame
			if err := conn.Invoke(context.Background(), svc.prefix+"Echo", &passthrough.Frame{Payload: []byte("ab")}, &out,
				grpc.ForceCodecV2(passthrough.Codec{}), grpc.WaitForReady(true)); err != nil || string(out.Payload) != "ba" {
				t.Errorf("%s: the call after %s: %q, %v", svc.name, method, out.Payload, err)
			}
		}
	}
}
