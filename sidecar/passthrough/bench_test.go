package passthrough_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
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

// BenchmarkHTTPInfer compares a small binary inference request (a JSON
// header and 16 bytes of tensor, answered with the same bytes and a
// Content-Length) made directly to an in-process upstream with the same
// request through the proxy, over loopback: as the proxy relays it when no
// seam takes it ("sidecar": the body read from the client as it is sent
// upstream), and as the sidecar relays an inference request for a model it
// does not serve ("sidecar-read": the seam reads the body first, then
// passes it on from memory with SetBody).
func BenchmarkHTTPInfer(b *testing.B) {
	body, headerLen := sidecartest.BinaryInferBody()
	up := sidecartest.StartUpstreamHTTP(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ := io.ReadAll(r.Body)
		w.Header().Set("Inference-Header-Content-Length", strconv.Itoa(headerLen))
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(len(got)))
		w.Write(got)
	}))
	plain := sidecartest.StartSidecar(b, server.Config{TritonHTTP: up})
	read := sidecartest.StartSidecar(b, server.Config{TritonHTTP: up, InterceptHTTP: func(_ *http.Request, pass http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { // the seam of controllable.Models, for a model it does not serve
			raw, err := io.ReadAll(r.Body)
			if err != nil {
				b.Error(err)
				return
			}
			passthrough.SetBody(r, raw)
			pass.ServeHTTP(w, r)
		})
	}})
	for _, bc := range []struct{ name, addr string }{
		{"direct", up}, {"sidecar", plain.HTTPAddr().String()}, {"sidecar-read", read.HTTPAddr().String()},
	} {
		b.Run(bc.name, func(b *testing.B) {
			client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
			defer client.CloseIdleConnections()
			url := "http://" + bc.addr + "/v2/models/affine_fp32/infer"
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
				req.Header.Set("Inference-Header-Content-Length", strconv.Itoa(headerLen))
				req.Header.Set("Content-Type", "application/octet-stream")
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				got, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK || !bytes.Equal(got, body) {
					b.Fatalf("status %d, body %q, %v", resp.StatusCode, got, err)
				}
			}
		})
	}
}
