package triton

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/triton/internal/tritontest"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// startFake serves f (tritontest.Server) and returns a client dialed to it.
func startFake(t *testing.T, f *tritontest.Server, opts ...Option) *Client {
	t.Helper()
	opts = append([]Option{WithDialOptions(tritontest.Serve(t, f)), WithRetry(5, time.Millisecond, 5*time.Millisecond)}, opts...)
	c, err := Dial(context.Background(), tritontest.Target, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func wantCode(t *testing.T, err error, code codes.Code, contains ...string) {
	t.Helper()
	if got := status.Code(err); got != code {
		t.Fatalf("error %v: code %s, want %s", err, got, code)
	}
	for _, s := range contains {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not contain %q", err, s)
		}
	}
}

func TestClientMetadataCalls(t *testing.T) {
	f := &tritontest.Server{}
	c := startFake(t, f)
	ctx := context.Background()

	if live, err := c.ServerLive(ctx); err != nil || !live {
		t.Errorf("ServerLive = %v, %v", live, err)
	}
	if ready, err := c.ServerReady(ctx); err != nil || !ready {
		t.Errorf("ServerReady = %v, %v", ready, err)
	}
	if ready, err := c.ModelReady(ctx, "affine_fp32", ""); err != nil || !ready {
		t.Errorf("ModelReady = %v, %v", ready, err)
	}
	if md, err := c.ServerMetadata(ctx); err != nil || md.GetName() != "fake" {
		t.Errorf("ServerMetadata = %v, %v", md, err)
	}
	if st, err := c.Health(ctx, ""); err != nil || st != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("Health = %v, %v", st, err)
	}
	for range 3 {
		m, err := c.ModelMetadata(ctx, "affine_fp32", "")
		if err != nil || m.GetInputs()[0].GetName() != "INPUT0" {
			t.Fatalf("ModelMetadata = %v, %v", m, err)
		}
		m.Inputs = nil // the caller's copy: must not reach the cache
	}
	if n := f.Count("ModelMetadata"); n != 1 {
		t.Errorf("ModelMetadata reached the server %d times, want 1 (cached)", n)
	}
	c.ForgetModel("affine_fp32")
	if _, err := c.ModelMetadata(ctx, "affine_fp32", ""); err != nil || f.Count("ModelMetadata") != 2 {
		t.Errorf("after ForgetModel: %v, %d calls, want a new call", err, f.Count("ModelMetadata"))
	}
	cfg, err := c.ModelConfig(ctx, "affine_fp32", "")
	if err != nil || cfg.GetInput()[0].GetDataType() != tritonpb.DataType_TYPE_FP32 {
		t.Errorf("ModelConfig = %v, %v", cfg, err)
	}
	if stats, err := c.ModelStatistics(ctx, "affine_fp32", ""); err != nil || len(stats) != 1 {
		t.Errorf("ModelStatistics = %v, %v", stats, err)
	}
	_, err = c.RepositoryIndex(ctx, true)
	wantCode(t, err, codes.Unimplemented, "RepositoryIndex")
}

func TestClientInfer(t *testing.T) {
	x := []float32{0, 1, -2.5, 3, 4, 5, 6, 7}
	want := make([]float32, len(x))
	for i, v := range x {
		want[i] = 2*v + 1
	}
	tests := []struct {
		name         string
		input        Tensor
		typedInput   bool
		typedOutputs bool
	}{
		{"fp32 raw in, raw out", NewFP32("INPUT0", []int64{2, 4}, x), false, false},
		{"fp32 typed in, raw out", NewFP32("INPUT0", []int64{2, 4}, x), true, false},
		{"fp32 raw in, typed out", NewFP32("INPUT0", []int64{2, 4}, x), false, true},
		{"fp32 typed in, typed out", NewFP32("INPUT0", []int64{2, 4}, x), true, true},
		{"fp16 raw", NewFP16("INPUT0", []int64{2, 4}, x), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &tritontest.Server{TypedOutputs: tt.typedOutputs, ResponseParams: map[string]*tritonpb.InferParameter{
				"react-preference": {ParameterChoice: &tritonpb.InferParameter_StringParam{StringParam: "a=1"}},
			}}
			c := startFake(t, f)
			model := "affine_" + strings.ToLower(tt.input.Datatype)
			resp, err := c.Infer(context.Background(), &InferRequest{
				Model: model, ID: "r1", Inputs: []Tensor{tt.input}, Outputs: []string{"OUTPUT0"}, Typed: tt.typedInput,
				Parameters: map[string]any{"s": "x", "i": 3, "b": true, "d": 0.25},
			})
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
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("OUTPUT0 = %v, want %v", got, want)
				}
			}
			if resp.ID != "r1" || resp.Parameters["react-preference"] != "a=1" {
				t.Errorf("response id %q parameters %v", resp.ID, resp.Parameters)
			}
			sent := f.LastInfer()
			if typed := sent.GetInputs()[0].GetContents() != nil; typed != tt.typedInput || (len(sent.GetRawInputContents()) == 1) == tt.typedInput {
				t.Errorf("sent typed=%v raw=%d, want typed=%v", typed, len(sent.GetRawInputContents()), tt.typedInput)
			}
			wantParams := map[string]any{"s": "x", "i": int64(3), "b": true, "d": 0.25}
			if got := FromParameters(sent.GetParameters()); len(got) != 4 || got["s"] != "x" || got["i"] != int64(3) || got["b"] != true || got["d"] != 0.25 {
				t.Errorf("sent parameters %v, want %v", got, wantParams)
			}
			if o := sent.GetOutputs(); len(o) != 1 || o[0].GetName() != "OUTPUT0" {
				t.Errorf("requested outputs %v", o)
			}
		})
	}
}

func TestClientInferRejectedBeforeSending(t *testing.T) {
	tests := []struct {
		name string
		req  *InferRequest
		code codes.Code
		msg  string
	}{
		{"wrong shape", &InferRequest{Model: "affine_fp32", Inputs: []Tensor{NewFP32("INPUT0", []int64{2, 5}, make([]float32, 10))}},
			codes.InvalidArgument, `model "affine_fp32" input "INPUT0": shape [2 5] does not match [-1 4]`},
		{"wrong datatype", &InferRequest{Model: "affine_fp32", Inputs: []Tensor{NewFP16("INPUT0", []int64{1, 4}, make([]float32, 4))}},
			codes.InvalidArgument, `model "affine_fp32" input "INPUT0": datatype FP16 does not match FP32`},
		{"typed FP16", &InferRequest{Model: "affine_fp16", Typed: true, Inputs: []Tensor{NewFP16("INPUT0", []int64{1, 4}, make([]float32, 4))}},
			codes.InvalidArgument, `FP16 has no typed contents field in Triton's protocol`},
		{"bad parameter", &InferRequest{Model: "affine_fp32", Parameters: map[string]any{"p": []int{1}}, Inputs: []Tensor{NewFP32("INPUT0", []int64{1, 4}, make([]float32, 4))}},
			codes.InvalidArgument, `parameter "p": unsupported type`},
		{"missing required input", &InferRequest{Model: "masked"},
			codes.InvalidArgument, `model "masked" input "A": missing`},
		{"unknown model", &InferRequest{Model: "nope", Inputs: []Tensor{NewFP32("INPUT0", []int64{1, 4}, make([]float32, 4))}},
			codes.NotFound, `"nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &tritontest.Server{}
			c := startFake(t, f)
			_, err := c.Infer(context.Background(), tt.req)
			wantCode(t, err, tt.code, tt.msg)
			if n := f.Count("ModelInfer"); n != 0 {
				t.Errorf("ModelInfer reached the server %d times, want 0", n)
			}
		})
	}
}

func TestClientInferOptionalInput(t *testing.T) {
	f := &tritontest.Server{}
	c := startFake(t, f)
	// MASK is optional in the model configuration, so leaving it out passes
	// validation; the fake then answers for A.
	_, err := c.Infer(context.Background(), &InferRequest{Model: "masked", Inputs: []Tensor{NewFP32("A", []int64{2}, []float32{1, 2})}})
	if err != nil {
		t.Fatal(err)
	}
	if f.Count("ModelConfig") != 1 || f.Count("ModelInfer") != 1 {
		t.Errorf("ModelConfig %d, ModelInfer %d calls, want 1 and 1", f.Count("ModelConfig"), f.Count("ModelInfer"))
	}
}

func TestClientRetriesMetadataOnUnavailable(t *testing.T) {
	f := &tritontest.Server{MetaFailures: 2}
	c := startFake(t, f)
	if _, err := c.ModelMetadata(context.Background(), "affine_fp32", ""); err != nil {
		t.Fatalf("ModelMetadata after 2 UNAVAILABLE: %v", err)
	}
	if n := f.Count("ModelMetadata"); n != 3 {
		t.Errorf("ModelMetadata called %d times, want 3", n)
	}

	f = &tritontest.Server{MetaFailures: 100}
	c = startFake(t, f)
	_, err := c.ModelMetadata(context.Background(), "affine_fp32", "")
	wantCode(t, err, codes.Unavailable, "warming up", "passthrough:///bufnet", `ModelMetadata "affine_fp32"`)
	if n := f.Count("ModelMetadata"); n != 5 {
		t.Errorf("ModelMetadata called %d times, want the 5 attempts", n)
	}
	var te *Error
	if !errors.As(err, &te) || te.Addr != "passthrough:///bufnet" {
		t.Errorf("error %v is not a *triton.Error with the address", err)
	}
}

func TestClientDoesNotRetryInfer(t *testing.T) {
	f := &tritontest.Server{}
	f.SetInferErr(status.Error(codes.Unavailable, "overloaded"))
	c := startFake(t, f)
	_, err := c.Infer(context.Background(), &InferRequest{Model: "affine_fp32", Inputs: []Tensor{NewFP32("INPUT0", []int64{1, 4}, make([]float32, 4))}})
	wantCode(t, err, codes.Unavailable, "overloaded")
	if n := f.Count("ModelInfer"); n != 1 {
		t.Errorf("ModelInfer called %d times, want 1", n)
	}
}

// TestClientForgetsStaleModel checks that the cached metadata of a model is
// dropped when the server's errors say the model changed state, and kept
// otherwise, including when our own validation refuses a request.
func TestClientForgetsStaleModel(t *testing.T) {
	ctx := context.Background()
	good := &InferRequest{Model: "affine_fp32", Inputs: []Tensor{NewFP32("INPUT0", []int64{1, 4}, make([]float32, 4))}}
	for _, tt := range []struct {
		name   string
		fail   func(c *Client, f *tritontest.Server) error // a failing call about affine_fp32
		code   codes.Code
		forget bool
	}{
		{"infer NOT_FOUND", inferFails(codes.NotFound), codes.NotFound, true},
		{"infer UNAVAILABLE", inferFails(codes.Unavailable), codes.Unavailable, true},
		{"infer FAILED_PRECONDITION", inferFails(codes.FailedPrecondition), codes.FailedPrecondition, true},
		{"infer INVALID_ARGUMENT from the server", inferFails(codes.InvalidArgument), codes.InvalidArgument, true},
		{"infer INTERNAL", inferFails(codes.Internal), codes.Internal, false},
		{"infer RESOURCE_EXHAUSTED", inferFails(codes.ResourceExhausted), codes.ResourceExhausted, false},
		{"infer INVALID_ARGUMENT from our validation", func(c *Client, _ *tritontest.Server) error {
			_, err := c.Infer(ctx, &InferRequest{Model: "affine_fp32", Inputs: []Tensor{NewFP32("INPUT0", []int64{1, 5}, make([]float32, 5))}})
			return err
		}, codes.InvalidArgument, false},
		{"metadata NOT_FOUND", metadataFails("404"), codes.NotFound, true},
		{"metadata UNAVAILABLE", metadataFails("503"), codes.Unavailable, true},
		{"metadata FAILED_PRECONDITION", metadataFails("412"), codes.FailedPrecondition, true},
		{"metadata INVALID_ARGUMENT", metadataFails("400"), codes.InvalidArgument, false},
		{"metadata INTERNAL", metadataFails("500"), codes.Internal, false},
		{"config NOT_FOUND", configFails("404"), codes.NotFound, true},
		{"config UNAVAILABLE", configFails("503"), codes.Unavailable, true},
		{"config INTERNAL", configFails("500"), codes.Internal, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &tritontest.Server{}
			c := startFake(t, f)
			if _, err := c.Infer(ctx, good); err != nil {
				t.Fatal(err)
			}
			before := f.Count("ModelMetadata")
			wantCode(t, tt.fail(c, f), tt.code)
			f.SetInferErr(nil)
			after := f.Count("ModelMetadata")
			if _, err := c.Infer(ctx, good); err != nil {
				t.Fatal(err)
			}
			refetched := f.Count("ModelMetadata") > after
			if refetched != tt.forget {
				t.Errorf("metadata refetched after the error: %v, want %v (%d calls before, %d after)", refetched, tt.forget, before, f.Count("ModelMetadata"))
			}
		})
	}
	// Another model's cache is untouched.
	f := &tritontest.Server{}
	c := startFake(t, f)
	for _, m := range []string{"affine_fp32", "affine_fp16"} {
		if _, err := c.ModelMetadata(ctx, m, ""); err != nil {
			t.Fatal(err)
		}
	}
	f.SetInferErr(status.Error(codes.NotFound, "gone"))
	if _, err := c.Infer(ctx, good); err == nil {
		t.Fatal("Infer succeeded")
	}
	n := f.Count("ModelMetadata")
	if _, err := c.ModelMetadata(ctx, "affine_fp16", ""); err != nil || f.Count("ModelMetadata") != n {
		t.Errorf("affine_fp16's metadata was refetched after an error about affine_fp32: %v", err)
	}
}

// inferFails makes the fake's ModelInfer fail with code, and sends a valid
// request.
func inferFails(code codes.Code) func(*Client, *tritontest.Server) error {
	return func(c *Client, f *tritontest.Server) error {
		f.SetInferErr(status.Error(code, "injected"))
		_, err := c.Infer(context.Background(), &InferRequest{Model: "affine_fp32", Inputs: []Tensor{NewFP32("INPUT0", []int64{1, 4}, make([]float32, 4))}})
		return err
	}
}

// metadataFails asks for a version of affine_fp32 whose metadata the fake
// refuses (see tritontest.Server).
func metadataFails(version string) func(*Client, *tritontest.Server) error {
	return func(c *Client, _ *tritontest.Server) error {
		_, err := c.ModelMetadata(context.Background(), "affine_fp32", version)
		return err
	}
}

// configFails asks for a version of affine_fp32 whose configuration the
// fake refuses.
func configFails(version string) func(*Client, *tritontest.Server) error {
	return func(c *Client, _ *tritontest.Server) error {
		_, err := c.ModelConfig(context.Background(), "affine_fp32", version)
		return err
	}
}

func TestClientNotFound(t *testing.T) {
	c := startFake(t, &tritontest.Server{})
	_, err := c.ModelMetadata(context.Background(), "nope", "")
	wantCode(t, err, codes.NotFound, `"nope"`, "unknown model")
}

func TestClientInferDeadline(t *testing.T) {
	c := startFake(t, &tritontest.Server{}, WithTimeout(100*time.Millisecond))
	start := time.Now()
	_, err := c.Infer(context.Background(), &InferRequest{Model: "slow", Inputs: []Tensor{NewFP32("INPUT0", []int64{1, 4}, make([]float32, 4))}})
	wantCode(t, err, codes.DeadlineExceeded, "ModelInfer")
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v, want about the 100ms default deadline", d)
	}
}

func TestClientUnreachable(t *testing.T) {
	// A port nobody listens on: connection refused.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := lis.Addr().String()
	lis.Close()
	// A dialer that never connects: the deadline passes while connecting.
	hang := grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	tests := []struct {
		name string
		addr string
		opts []Option
	}{
		{"closed port", closed, nil},
		{"black hole", "passthrough:///blackhole", []Option{WithDialOptions(hang)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Dial(context.Background(), tt.addr, append(tt.opts, WithTimeout(300*time.Millisecond))...)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			start := time.Now()
			_, err = c.ServerLive(context.Background())
			wantCode(t, err, codes.Unavailable, tt.addr)
			_, err = c.Infer(context.Background(), &InferRequest{Model: "m"})
			wantCode(t, err, codes.Unavailable, tt.addr)
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %v, want about two 300ms deadlines", d)
			}

			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			_, err = Dial(ctx, tt.addr, append(tt.opts, WithBlock())...)
			wantCode(t, err, codes.Unavailable, tt.addr)
		})
	}
}

func TestDialTLSFileErrors(t *testing.T) {
	tests := []struct {
		name  string
		files TLSFiles
		want  string
	}{
		{"missing CA", TLSFiles{CAFile: "/nonexistent/ca.pem"}, "reading CA file"},
		{"cert without key", TLSFiles{CertFile: "c.pem"}, "CertFile and KeyFile must be given together"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Dial(context.Background(), "localhost:8001", WithTLS(tt.files))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}
