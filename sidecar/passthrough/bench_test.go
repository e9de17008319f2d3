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
// in-process upstream with the same call through the proxy, over loopback:
// of a service the proxy does not know ("sidecar", relayed as a stream
// copied both ways) and of Triton's ("sidecar-triton", read, then one
// unary call upstream). bench/sidecar-passthrough.sh measures the proxy
// against the real Triton.
func BenchmarkGRPCUnary(b *testing.B) {
	u := &sidecartest.RawUpstream{Cancelled: make(chan struct{})}
	up := sidecartest.StartUpstreamGRPC(b, func(*grpc.Server) {}, grpc.UnknownServiceHandler(u.Handle), grpc.ForceServerCodecV2(passthrough.Codec{}))
	s := sidecartest.StartSidecar(b, server.Config{TritonGRPC: up})
	payload := make([]byte, 64)
	for _, bc := range []struct{ name, addr, method string }{
		{"direct", up, "/x.Unknown/Echo"},
		{"sidecar", s.GRPCAddr().String(), "/x.Unknown/Echo"},
		{"sidecar-triton", s.GRPCAddr().String(), passthrough.Service + "Echo"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			conn := sidecartest.Dial(b, bc.addr)
			for b.Loop() {
				var out passthrough.Frame
				if err := conn.Invoke(context.Background(), bc.method, &passthrough.Frame{Payload: payload}, &out, grpc.ForceCodecV2(passthrough.Codec{})); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
