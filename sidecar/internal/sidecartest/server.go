package sidecartest

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/mergectl/react-triton/internal/testutil"
	"github.com/mergectl/react-triton/sidecar/server"
)

// StartUpstreamGRPC serves a gRPC server, set up by register, on a loopback
// port for the test's duration and returns its address.
func StartUpstreamGRPC(t testing.TB, register func(*grpc.Server), opts ...grpc.ServerOption) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(opts...)
	register(s)
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	return lis.Addr().String()
}

// StartSidecar serves a sidecar in front of the given upstreams on loopback
// ports until the test ends, and returns it.
func StartSidecar(t testing.TB, cfg server.Config) *server.Server {
	t.Helper()
	if cfg.TritonHTTP == "" {
		cfg.TritonHTTP = testutil.ClosedAddr(t)
	}
	if cfg.TritonGRPC == "" {
		cfg.TritonGRPC = testutil.ClosedAddr(t)
	}
	cfg.GRPCListen, cfg.HTTPListen = "127.0.0.1:0", "127.0.0.1:0"
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s
}

// Dial returns a client connection to addr, closed when the test ends.
func Dial(t testing.TB, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// StartUpstreamHTTP serves h on a loopback port for the test's duration and
// returns its address (host:port).
func StartUpstreamHTTP(t testing.TB, h http.Handler) string {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s.Listener.Addr().String()
}
