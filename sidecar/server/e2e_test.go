package server_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/mergectl/react-triton/sidecar/internal/sidecartest"
	"github.com/mergectl/react-triton/sidecar/passthrough"
	"github.com/mergectl/react-triton/sidecar/server"
	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/tritonpb"

	"github.com/mergectl/react-triton/internal/testutil"
)

// These tests put an in-process sidecar in front of the real Triton that
// scripts/test.sh starts (TRITON_GRPC_ADDR, TRITON_HTTP_ADDR, with the models
// of triton/testdata/repo). Without it they skip, or fail when REACT_E2E=1.

func realTriton(t *testing.T) (grpcAddr, httpAddr string) {
	t.Helper()
	addrs := testutil.Env(t, "TRITON_GRPC_ADDR", "TRITON_HTTP_ADDR")
	return addrs[0], addrs[1]
}

func TestE2EClientThroughSidecar(t *testing.T) {
	up, upHTTP := realTriton(t)
	s := sidecartest.StartSidecar(t, server.Config{TritonGRPC: up, TritonHTTP: upHTTP})
	ctx := context.Background()
	c, err := triton.Dial(ctx, s.GRPCAddr().String(), triton.WithTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	if ready, err := c.ServerReady(ctx); err != nil || !ready {
		t.Errorf("ServerReady = %v, %v", ready, err)
	}
	if st, err := c.Health(ctx, ""); err != nil || st != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("Health = %v, %v", st, err)
	}
	md, err := c.ServerMetadata(ctx)
	if err != nil || md.GetName() != "triton" || md.GetVersion() != "2.51.0" {
		t.Errorf("ServerMetadata = %v, %v", md, err)
	}
	x := []float32{1, -2.5, 0.25, 1000, 3, 4, -5, 6}
	resp, err := c.Infer(ctx, &triton.InferRequest{Model: "affine_fp32", ID: "via-sidecar",
		Inputs: []triton.Tensor{triton.NewFP32("INPUT0", []int64{2, 4}, x)}})
	if err != nil {
		t.Fatal(err)
	}
	out, ok := resp.Output("OUTPUT0")
	if !ok {
		t.Fatalf("no OUTPUT0 in %+v", resp)
	}
	got, err := out.AsFloat32()
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range x {
		if got[i] != 2*v+1 {
			t.Fatalf("OUTPUT0 = %v for x = %v, want 2x+1", got, x)
		}
	}
	if resp.ID != "via-sidecar" {
		t.Errorf("response id %q", resp.ID)
	}

	// ModelStreamInfer (bidi): one response per request for this model.
	stream, err := c.RPC().ModelStreamInfer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		req, err := (&triton.InferRequest{Model: "affine_fp32", ID: strconv.Itoa(i),
			Inputs: []triton.Tensor{triton.NewFP32("INPUT0", []int64{1, 4}, []float32{float32(i), 0, 0, 0})}}).Proto()
		if err != nil {
			t.Fatal(err)
		}
		if err := stream.Send(req); err != nil {
			t.Fatal(err)
		}
		r, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if r.GetErrorMessage() != "" || r.GetInferResponse().GetId() != strconv.Itoa(i) {
			t.Fatalf("stream response %v", r)
		}
		if y := r.GetInferResponse().GetRawOutputContents()[0][:4]; !bytes.Equal(y, f32le(2*float32(i)+1)) {
			t.Errorf("stream response %d: OUTPUT0[0] bytes %v", i, y)
		}
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != io.EOF {
		t.Errorf("after CloseSend: %v, want io.EOF", err)
	}
}

func f32le(v float32) []byte {
	return binary.LittleEndian.AppendUint32(nil, math.Float32bits(v))
}

// TestE2ESameBytesAsTriton sends the same requests to Triton and through the
// sidecar and compares the raw answers: bytes for successes, code and
// message for errors.
func TestE2ESameBytesAsTriton(t *testing.T) {
	up, upHTTP := realTriton(t)
	s := sidecartest.StartSidecar(t, server.Config{TritonGRPC: up, TritonHTTP: upHTTP})
	direct, proxied := sidecartest.Dial(t, up), sidecartest.Dial(t, s.GRPCAddr().String())
	infer, err := proto.Marshal(&tritonpb.ModelInferRequest{ModelName: "affine_fp32",
		Inputs:           []*tritonpb.ModelInferRequest_InferInputTensor{{Name: "INPUT0", Datatype: "FP32", Shape: []int64{1, 4}}},
		RawInputContents: [][]byte{bytes.Repeat(f32le(1.5), 4)}})
	if err != nil {
		t.Fatal(err)
	}
	mustMarshal := func(m proto.Message) []byte {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	calls := []struct {
		method string
		req    []byte
	}{
		{tritonpb.GRPCInferenceService_ModelMetadata_FullMethodName, mustMarshal(&tritonpb.ModelMetadataRequest{Name: "affine_fp32"})},
		{tritonpb.GRPCInferenceService_ModelConfig_FullMethodName, mustMarshal(&tritonpb.ModelConfigRequest{Name: "identity_bf16"})},
		{tritonpb.GRPCInferenceService_ModelInfer_FullMethodName, infer},
		{tritonpb.GRPCInferenceService_ModelMetadata_FullMethodName, mustMarshal(&tritonpb.ModelMetadataRequest{Name: "no_such_model"})},
		{"/inference.GRPCInferenceService/NoSuchMethod", nil},
	}
	for _, call := range calls {
		do := func(conn *grpc.ClientConn) ([]byte, *status.Status) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var out passthrough.Frame
			err := conn.Invoke(ctx, call.method, &passthrough.Frame{Payload: call.req}, &out, grpc.ForceCodecV2(passthrough.Codec{}))
			return out.Payload, status.Convert(err)
		}
		want, wantSt := do(direct)
		got, gotSt := do(proxied)
		if !bytes.Equal(got, want) || gotSt.Code() != wantSt.Code() || gotSt.Message() != wantSt.Message() {
			t.Errorf("%s: through the sidecar %d bytes, %v %q; directly %d bytes, %v %q",
				call.method, len(got), gotSt.Code(), gotSt.Message(), len(want), wantSt.Code(), wantSt.Message())
		}
	}

	body, headerLen := sidecartest.BinaryInferBody()
	requests := []struct{ method, path string }{
		{http.MethodGet, "/v2/models/affine_fp32/config"},
		{http.MethodGet, "/v2/models/no_such_model"},
		{http.MethodPost, "/v2/models/affine_fp32/infer"},
	}
	for _, r := range requests {
		do := func(addr string) string {
			req, err := http.NewRequest(r.method, fmt.Sprintf("http://%s%s", addr, r.path), bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Inference-Header-Content-Length", strconv.Itoa(headerLen))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			keys := []string{"Content-Type", "Content-Length", "Inference-Header-Content-Length"}
			slices.Sort(keys)
			h := ""
			for _, k := range keys {
				h += k + "=" + resp.Header.Get(k) + " "
			}
			return fmt.Sprintf("%d %s%q", resp.StatusCode, h, b)
		}
		want, got := do(upHTTP), do(s.HTTPAddr().String())
		if got != want {
			t.Errorf("%s %s: through the sidecar\n  %s\ndirectly\n  %s", r.method, r.path, got, want)
		}
	}
}
