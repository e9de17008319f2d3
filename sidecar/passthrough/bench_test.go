package passthrough_test

import (
	"context"
	"testing"

	"google.golang.org/grpc"

	"github.com/mergectl/react-triton/sidecar/internal/sidecartest"
	"github.com/mergectl/react-triton/sidecar/passthrough"
	"github.com/mergectl/react-triton/sidecar/server"
)

// BenchmarkGRPCUnary compares a small unary call made directly to an
// in-process upstream with the same call through the proxy, over loopback.
// bench/sidecar-passthrough.sh measures the same against the real Triton.
func BenchmarkGRPCUnary(b *testing.B) {
	u := &sidecartest.RawUpstream{Cancelled: make(chan struct{})}
	up := sidecartest.StartUpstreamGRPC(b, func(*grpc.Server) {}, grpc.UnknownServiceHandler(u.Handle), grpc.ForceServerCodecV2(passthrough.Codec{}))
	s := sidecartest.StartSidecar(b, server.Config{TritonGRPC: up})
	payload := make([]byte, 64)
	for _, bc := range []struct{ name, addr string }{{"direct", up}, {"sidecar", s.GRPCAddr().String()}} {
		b.Run(bc.name, func(b *testing.B) {
			conn := sidecartest.Dial(b, bc.addr)
			for b.Loop() {
				var out passthrough.Frame
				if err := conn.Invoke(context.Background(), "/x.Unknown/Echo", &passthrough.Frame{Payload: payload}, &out, grpc.ForceCodecV2(passthrough.Codec{})); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
