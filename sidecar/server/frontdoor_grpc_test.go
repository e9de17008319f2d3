package server_test

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/internal/sidecartest"
	"github.com/mergectl/react-triton/sidecar/passthrough"
	"github.com/mergectl/react-triton/sidecar/server"
)

// TestGRPCMetadataLimit: metadata over server.max_header_bytes is refused
// with INVALID_ARGUMENT before it reaches Triton, for every method; within
// it, calls pass.
func TestGRPCMetadataLimit(t *testing.T) {
	s, u := sidecartest.StartRecorded(t, server.Config{Server: serverConfig(func(c *config.Server) { c.MaxHeaderBytes = 2 * config.KiB })})
	conn := sidecartest.Dial(t, s.GRPCAddr().String())
	for _, method := range []string{passthrough.Service + "ServerLive", passthrough.Service + "ModelInfer", "/x.Unknown/Echo"} {
		small := metadata.AppendToOutgoingContext(context.Background(), "cookie", strings.Repeat("c", 1500))
		if err := sidecartest.InvokeRaw(small, conn, method); err != nil {
			t.Errorf("%s with 1.5 KB of metadata: %v", method, err)
		}
		large := metadata.AppendToOutgoingContext(context.Background(), "cookie", strings.Repeat("c", 2100))
		err := sidecartest.InvokeRaw(large, conn, method)
		if st := status.Convert(err); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), "server.max_header_bytes (2048)") {
			t.Errorf("%s with 2.1 KB of metadata: %v, want INVALID_ARGUMENT", method, err)
		}
	}
	if g, _ := u.Calls(); g != 3 {
		t.Errorf("%d calls reached Triton, want the 3 within the limit", g)
	}
}

// TestGRPCReadTimeout: a unary call of Triton's service that sends no
// request ends with DEADLINE_EXCEEDED at server.read_timeout, before
// Triton hears of it; a ModelStreamInfer stream may stay quiet.
func TestGRPCReadTimeout(t *testing.T) {
	s, u := sidecartest.StartRecorded(t, server.Config{Server: serverConfig(func(c *config.Server) { c.ReadTimeout = 300 * time.Millisecond })})
	conn := sidecartest.Dial(t, s.GRPCAddr().String())
	for _, method := range []string{passthrough.Service + "ModelInfer", passthrough.Service + "ModelMetadata"} {
		start := time.Now()
		cs, err := sidecartest.NewRawStream(context.Background(), conn, method)
		if err != nil {
			t.Fatal(err)
		}
		err = cs.RecvMsg(&passthrough.Frame{})
		took := time.Since(start)
		if st := status.Convert(err); st.Code() != codes.DeadlineExceeded || !strings.Contains(st.Message(), "server.read_timeout") || took < 250*time.Millisecond || took > 3*time.Second {
			t.Errorf("%s without a request: %v after %v, want DEADLINE_EXCEEDED at about 300ms", method, err, took)
		}
	}
	if g, _ := u.Calls(); g != 0 {
		t.Errorf("%d calls reached Triton", g)
	}
	// A request sent late but within the bound is served.
	cs, err := sidecartest.NewRawStream(context.Background(), conn, passthrough.Service+"ModelInfer")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if err := cs.SendMsg(&passthrough.Frame{}); err != nil {
		t.Fatal(err)
	}
	cs.CloseSend()
	if err := cs.RecvMsg(&passthrough.Frame{}); err != nil {
		t.Errorf("a request within the bound: %v", err)
	}
	// A stream's first request may come later.
	st, err := sidecartest.NewRawStream(context.Background(), conn, passthrough.Service+"ModelStreamInfer")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(600 * time.Millisecond)
	if err := st.SendMsg(&passthrough.Frame{}); err != nil {
		t.Fatal(err)
	}
	if err := st.RecvMsg(&passthrough.Frame{}); err != nil {
		t.Errorf("ModelStreamInfer quiet for twice read_timeout: %v", err)
	}
}

// TestGRPCIdleTimeout: a connection with no call for server.idle_timeout
// is sent a GOAWAY: the client's connection goes idle, and the next call
// reconnects.
func TestGRPCIdleTimeout(t *testing.T) {
	s, _ := sidecartest.StartRecorded(t, server.Config{Server: serverConfig(func(c *config.Server) { c.IdleTimeout = 300 * time.Millisecond })})
	conn := sidecartest.Dial(t, s.GRPCAddr().String())
	if err := sidecartest.InvokeRaw(context.Background(), conn, passthrough.Service+"ServerLive"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for state := conn.GetState(); state == connectivity.Ready; state = conn.GetState() {
		if !conn.WaitForStateChange(ctx, state) {
			t.Fatal("the idle connection was not closed")
		}
	}
	if took := time.Since(start); took < 200*time.Millisecond {
		t.Errorf("closed after %v, before the idle timeout", took)
	}
	if err := sidecartest.InvokeRaw(context.Background(), conn, passthrough.Service+"ServerLive"); err != nil {
		t.Errorf("the next call: %v", err)
	}
}

// http2Frame writes one HTTP/2 frame.
func http2Frame(w io.Writer, typ byte, flags byte, stream uint32, payload []byte) error {
	var h [9]byte
	h[0], h[1], h[2] = byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload))
	h[3], h[4] = typ, flags
	binary.BigEndian.PutUint32(h[5:], stream)
	_, err := w.Write(append(h[:], payload...))
	return err
}

// pingFlood sends 10 HTTP/2 PINGs 10ms apart on a new connection to addr,
// with no call open, and returns the GOAWAY it got within a second (error
// code and debug data), or ok false.
func pingFlood(t *testing.T, addr string) (code uint32, debug string, ok bool) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	io.WriteString(c, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
	http2Frame(c, 0x4, 0, 0, nil) // SETTINGS
	go func() {
		for i := range 10 {
			if http2Frame(c, 0x6, 0, 0, []byte{0, 0, 0, 0, 0, 0, 0, byte(i)}) != nil { // PING
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	var hdr [9]byte
	for {
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return 0, "", false
		}
		payload := make([]byte, int(hdr[0])<<16|int(hdr[1])<<8|int(hdr[2]))
		if _, err := io.ReadFull(c, payload); err != nil {
			return 0, "", false
		}
		if hdr[3] == 0x7 { // GOAWAY
			return binary.BigEndian.Uint32(payload[4:8]), string(payload[8:]), true
		}
	}
}

// TestGRPCKeepaliveEnforcement: a client that pings more often than
// server.grpc.keepalive_min_time is sent a GOAWAY ENHANCE_YOUR_CALM
// "too_many_pings" and disconnected, and so is one that pings with no
// call open unless keepalive_permit_without_stream.
func TestGRPCKeepaliveEnforcement(t *testing.T) {
	for _, tt := range []struct {
		name        string
		minTime     time.Duration
		permit      bool
		disconnects bool
	}{
		{"pings without a call", time.Millisecond, false, true},
		{"pings too often", time.Minute, true, true},
		{"pings allowed", time.Millisecond, true, false},
		// The bound is the configured one: pings 10ms apart against 100ms.
		{"pings more often than keepalive_min_time", 100 * time.Millisecond, true, true},
	} {
		s, _ := sidecartest.StartRecorded(t, server.Config{Server: serverConfig(func(c *config.Server) {
			c.GRPC.KeepaliveMinTime, c.GRPC.KeepalivePermitWithoutStream = tt.minTime, tt.permit
		})})
		code, debug, goaway := pingFlood(t, s.GRPCAddr().String())
		if goaway != tt.disconnects || (goaway && (code != 0xb || !strings.Contains(debug, "too_many_pings"))) {
			t.Errorf("%s: GOAWAY %v (code %#x %q), want %v with ENHANCE_YOUR_CALM too_many_pings", tt.name, goaway, code, debug, tt.disconnects)
		}
	}
}

// TestGRPCMaxConcurrentStreams: a connection has at most
// server.grpc.max_concurrent_streams calls open; the next waits until one
// ends.
func TestGRPCMaxConcurrentStreams(t *testing.T) {
	// Every call hangs, its header sent, until the client ends it.
	hangs := func(_ any, ss grpc.ServerStream) error {
		if err := ss.SendHeader(metadata.Pairs("hanging", "yes")); err != nil {
			return err
		}
		<-ss.Context().Done()
		return ss.Context().Err()
	}
	up := sidecartest.StartUpstreamGRPC(t, func(*grpc.Server) {}, grpc.UnknownServiceHandler(hangs), grpc.ForceServerCodecV2(passthrough.Codec{}))
	s := sidecartest.StartSidecar(t, server.Config{TritonGRPC: up, Server: serverConfig(func(c *config.Server) { c.GRPC.MaxConcurrentStreams = 2 })})
	conn := sidecartest.Dial(t, s.GRPCAddr().String())
	hang := func(ctx context.Context) (grpc.ClientStream, error) {
		cs, err := sidecartest.NewRawStream(ctx, conn, "/x.Unknown/Hang")
		if err != nil {
			return nil, err
		}
		_, err = cs.Header()
		return cs, err
	}
	first, cancelFirst := context.WithCancel(context.Background())
	if _, err := hang(first); err != nil {
		t.Fatal(err)
	}
	if _, err := hang(context.Background()); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := hang(short); status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("a third call: %v, want it held back until its deadline", err)
	}
	cancelFirst()
	ctx, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	if _, err := hang(ctx); err != nil {
		t.Errorf("a third call once the first ended: %v", err)
	}
}

// TestGRPCStreamInflightBound: one ModelStreamInfer stream has at most
// server.grpc.max_concurrent_streams controllable requests in flight; the
// rest wait in the client's stream, and all are answered.
func TestGRPCStreamInflightBound(t *testing.T) {
	h := sidecartest.StartHarness(t, func(c *sidecartest.CtlConfig) { c.Sections = "server:\n  grpc:\n    max_concurrent_streams: 2\n" })
	release := h.Fake.Hold("backbone")
	defer release()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stream, err := h.Client.ModelStreamInfer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const n = 6
	for i := range n {
		if err := stream.Send(sidecartest.CtlRequest("multi", string(rune('a'+i)), sidecartest.CtlBatch)); err != nil {
			t.Fatal(err)
		}
	}
	sidecartest.WaitFor(t, 5*time.Second, "two backbone calls", func() bool { return h.Fake.Calls("backbone") >= 2 })
	time.Sleep(200 * time.Millisecond)
	if got := h.Fake.Calls("backbone"); got != 2 {
		t.Errorf("%d backbone calls in flight, want 2", got)
	}
	release()
	for range n {
		r, err := stream.Recv()
		if err != nil || r.GetErrorMessage() != "" {
			t.Fatalf("%v %v", r.GetErrorMessage(), err)
		}
	}
	stream.CloseSend()
}

// TestGRPCForwardedFor: a call passed through carries the client's
// x-forwarded-for with the peer appended.
func TestGRPCForwardedFor(t *testing.T) {
	s, u := sidecartest.StartRecorded(t, server.Config{})
	conn := sidecartest.Dial(t, s.GRPCAddr().String())
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-forwarded-for", "203.0.113.9")
	if err := sidecartest.InvokeRaw(ctx, conn, passthrough.Service+"ServerLive"); err != nil {
		t.Fatal(err)
	}
	if got := u.LastMD().Get("x-forwarded-for"); len(got) != 1 || got[0] != "203.0.113.9, 127.0.0.1" {
		t.Errorf("x-forwarded-for at Triton = %q", got)
	}
	if err := sidecartest.InvokeRaw(context.Background(), conn, passthrough.Service+"ServerLive"); err != nil {
		t.Fatal(err)
	}
	if got := u.LastMD().Get("x-forwarded-for"); len(got) != 1 || got[0] != "127.0.0.1" {
		t.Errorf("x-forwarded-for at Triton = %q", got)
	}
}

// TestGRPCHandshakeTimeout: a connection to the gRPC listener that sends
// no HTTP/2 preface, or part of one, is closed at
// server.read_header_timeout.
func TestGRPCHandshakeTimeout(t *testing.T) {
	s, u := sidecartest.StartRecorded(t, server.Config{Server: serverConfig(func(c *config.Server) { c.ReadHeaderTimeout = 300 * time.Millisecond })})
	for _, sent := range []string{"", "PRI * HTTP/2.0\r\n"} {
		c := rawHTTP(t, s.GRPCAddr().String(), sent)
		took, _ := closedWithin(t, c, 5*time.Second)
		if took < 250*time.Millisecond || took > 2*time.Second {
			t.Errorf("sent %q: closed after %v, want about 300ms", sent, took)
		}
	}
	if g, _ := u.Calls(); g != 0 {
		t.Errorf("%d calls reached Triton", g)
	}
}
