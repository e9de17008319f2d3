package triton_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/tritonpb"

	"github.com/mergectl/react-triton/internal/testutil"
)

// These tests run against the real Triton that scripts/test.sh starts with
// the model repository triton/testdata/repo, found through TRITON_GRPC_ADDR.
// Without it they skip, or fail when REACT_E2E=1.

func tritonAddr(t *testing.T) string {
	t.Helper()
	return testutil.Env(t, "TRITON_GRPC_ADDR")[0]
}

// inferCounter is a client-side hook: it counts the ModelInfer RPCs that
// leave the client.
type inferCounter struct{ n atomic.Int64 }

func (c *inferCounter) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if method == tritonpb.GRPCInferenceService_ModelInfer_FullMethodName {
		c.n.Add(1)
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

func dialTriton(t *testing.T, opts ...triton.Option) (*triton.Client, *inferCounter) {
	t.Helper()
	addr := tritonAddr(t)
	counter := &inferCounter{}
	opts = append([]triton.Option{triton.WithTimeout(30 * time.Second), triton.WithDialOptions(grpc.WithUnaryInterceptor(counter.intercept))}, opts...)
	c, err := triton.Dial(context.Background(), addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, counter
}

func TestTritonServer(t *testing.T) {
	c, _ := dialTriton(t)
	ctx := context.Background()
	if live, err := c.ServerLive(ctx); err != nil || !live {
		t.Errorf("ServerLive = %v, %v", live, err)
	}
	if ready, err := c.ServerReady(ctx); err != nil || !ready {
		t.Errorf("ServerReady = %v, %v", ready, err)
	}
	md, err := c.ServerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("server %s %s, extensions %v", md.GetName(), md.GetVersion(), md.GetExtensions())
	if md.GetName() != "triton" || md.GetVersion() == "" || !slices.Contains(md.GetExtensions(), "statistics") {
		t.Errorf("ServerMetadata = %v", md)
	}
	if st, err := c.Health(ctx, ""); err != nil || st != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("Health = %v, %v", st, err)
	}
	models, err := c.RepositoryIndex(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range models {
		names = append(names, m.GetName())
	}
	if !slices.Contains(names, "affine_fp32") || !slices.Contains(names, "affine_fp16") {
		t.Errorf("RepositoryIndex = %v, want the affine models", names)
	}
}

func TestTritonModelMetadataAndConfig(t *testing.T) {
	c, _ := dialTriton(t)
	ctx := context.Background()
	for _, tt := range []struct {
		model string
		dt    string
		cfgDT tritonpb.DataType
	}{
		{"affine_fp32", triton.FP32, tritonpb.DataType_TYPE_FP32},
		{"affine_fp16", triton.FP16, tritonpb.DataType_TYPE_FP16},
	} {
		t.Run(tt.model, func(t *testing.T) {
			if ready, err := c.ModelReady(ctx, tt.model, ""); err != nil || !ready {
				t.Errorf("ModelReady = %v, %v", ready, err)
			}
			md, err := c.ModelMetadata(ctx, tt.model, "")
			if err != nil {
				t.Fatal(err)
			}
			in, out := md.GetInputs(), md.GetOutputs()
			if md.GetName() != tt.model || len(in) != 1 || len(out) != 1 ||
				in[0].GetName() != "INPUT0" || in[0].GetDatatype() != tt.dt || !slices.Equal(in[0].GetShape(), []int64{-1, 4}) ||
				out[0].GetName() != "OUTPUT0" || out[0].GetDatatype() != tt.dt || !slices.Equal(out[0].GetShape(), []int64{-1, 4}) {
				t.Errorf("ModelMetadata = %v", md)
			}
			cfg, err := c.ModelConfig(ctx, tt.model, "")
			if err != nil {
				t.Fatal(err)
			}
			ci := cfg.GetInput()
			if cfg.GetName() != tt.model || cfg.GetBackend() != "python" || cfg.GetMaxBatchSize() != 0 ||
				len(ci) != 1 || ci[0].GetDataType() != tt.cfgDT || !slices.Equal(ci[0].GetDims(), []int64{-1, 4}) ||
				len(cfg.GetOutput()) != 1 || cfg.GetOutput()[0].GetDataType() != tt.cfgDT {
				t.Errorf("ModelConfig = %v", cfg)
			}
			if g := cfg.GetInstanceGroup(); len(g) != 1 || g[0].GetKind() != tritonpb.ModelInstanceGroup_KIND_CPU || g[0].GetCount() != 1 {
				t.Errorf("instance_group = %v", g)
			}
		})
	}
}

// affineInputs is triton/testdata/affine_inputs.json: the inputs this test
// and tests/test_triton_harness.py both send to the affine models, so that
// our client and the official one are seen to get the same numbers for the
// same inputs.
type affineInputs struct {
	Shape []int64   `json:"shape"`
	FP32  []float64 `json:"fp32"`
	FP16  []float64 `json:"fp16"`
}

func loadAffineInputs(t *testing.T) affineInputs {
	t.Helper()
	b, err := os.ReadFile("testdata/affine_inputs.json")
	if err != nil {
		t.Fatal(err)
	}
	var in affineInputs
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatalf("testdata/affine_inputs.json: %v", err)
	}
	n := int64(1)
	for _, d := range in.Shape {
		n *= d
	}
	if len(in.Shape) != 2 || in.Shape[1] != 4 || int64(len(in.FP32)) != n || int64(len(in.FP16)) != n {
		t.Fatalf("testdata/affine_inputs.json: shape %v with %d fp32 and %d fp16 values", in.Shape, len(in.FP32), len(in.FP16))
	}
	return in
}

// float32s rounds v to float32.
func float32s(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

func TestTritonInferAffine(t *testing.T) {
	c, counter := dialTriton(t)
	in := loadAffineInputs(t)
	x32, x16 := float32s(in.FP32), float32s(in.FP16)
	// The fixture promises fp16 values exact in FP16, and their 2x+1 too, so
	// every case checks equality.
	for _, v := range x16 {
		for _, y := range []float32{v, 2*v + 1} {
			if triton.FP16Float32(triton.FP16Bits(y)) != y {
				t.Fatalf("testdata/affine_inputs.json: fp16 value %v is not exact in FP16", y)
			}
		}
	}
	tests := []struct {
		name  string
		model string
		x     []float32
		input triton.Tensor
		typed bool
	}{
		{"fp32 raw", "affine_fp32", x32, triton.NewFP32("INPUT0", in.Shape, x32), false},
		{"fp32 typed", "affine_fp32", x32, triton.NewFP32("INPUT0", in.Shape, x32), true},
		{"fp16 raw", "affine_fp16", x16, triton.NewFP16("INPUT0", in.Shape, x16), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The closed form, in float32: 2x is exact and +1 rounds once,
			// as in numpy's float32 arithmetic.
			want := make([]float32, len(tt.x))
			for i, v := range tt.x {
				want[i] = 2*v + 1
			}
			resp, err := c.Infer(context.Background(), &triton.InferRequest{
				Model: tt.model, ID: "it-" + tt.name, Inputs: []triton.Tensor{tt.input}, Outputs: []string{"OUTPUT0"}, Typed: tt.typed,
				Parameters: map[string]any{"react-test": "1"},
			})
			if err != nil {
				t.Fatal(err)
			}
			out, ok := resp.Output("OUTPUT0")
			if !ok || out.Datatype != tt.input.Datatype || !slices.Equal(out.Shape, in.Shape) {
				t.Fatalf("response outputs %+v", resp.Outputs)
			}
			got, err := out.AsFloat32()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("OUTPUT0 = %v, want 2x+1 = %v", got, want)
			}
			if resp.Model != tt.model || resp.ID != "it-"+tt.name {
				t.Errorf("response model %q id %q", resp.Model, resp.ID)
			}
		})
	}
	if n := counter.n.Load(); n != int64(len(tests)) {
		t.Errorf("%d ModelInfer RPCs, want %d", n, len(tests))
	}
}

func TestTritonInferBF16AndBytes(t *testing.T) {
	c, _ := dialTriton(t)
	ctx := context.Background()
	x := []float32{1, -2, 0.5, 3.140625} // exact in bfloat16
	resp, err := c.Infer(ctx, &triton.InferRequest{Model: "identity_bf16", Inputs: []triton.Tensor{triton.NewBF16("INPUT0", []int64{1, 4}, x)}})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := resp.Output("OUTPUT0")
	if got, err := out.BF16(); err != nil || !slices.Equal(got, x) {
		t.Errorf("identity_bf16 OUTPUT0 = %v, %v; want %v", got, err, x)
	}

	resp, err = c.Infer(ctx, &triton.InferRequest{Model: "runtime_info", Inputs: []triton.Tensor{triton.NewStrings("NAME", []int64{2}, []string{"sys.version", "numpy"})}})
	if err != nil {
		t.Fatal(err)
	}
	out, _ = resp.Output("VALUE")
	vals, err := out.Strings()
	if err != nil || len(vals) != 2 || vals[0] == "" || vals[1] == "" {
		t.Errorf("runtime_info VALUE = %q, %v", vals, err)
	}
	t.Logf("runtime_info: %q", vals)
}

func TestTritonErrors(t *testing.T) {
	ctx := context.Background()
	c, counter := dialTriton(t)

	t.Run("unknown model", func(t *testing.T) {
		in := triton.NewFP32("INPUT0", []int64{1, 4}, make([]float32, 4))
		_, err := c.Infer(ctx, &triton.InferRequest{Model: "no_such_model", Inputs: []triton.Tensor{in}})
		if status.Code(err) != codes.NotFound || !strings.Contains(err.Error(), "no_such_model") {
			t.Errorf("Infer: %v, want NOT_FOUND naming the model", err)
		}
		// Triton's own answer, without our metadata check in front.
		raw, _ := dialTriton(t, triton.WithoutValidation())
		_, err = raw.Infer(ctx, &triton.InferRequest{Model: "no_such_model", Inputs: []triton.Tensor{in}})
		if status.Code(err) != codes.NotFound || !strings.Contains(err.Error(), "no_such_model") {
			t.Errorf("Infer without validation: %v, want NOT_FOUND naming the model", err)
		}
	})

	t.Run("wrong shape rejected before sending", func(t *testing.T) {
		before := inferenceCount(t, c, "affine_fp32")
		sent := counter.n.Load()
		_, err := c.Infer(ctx, &triton.InferRequest{Model: "affine_fp32",
			Inputs: []triton.Tensor{triton.NewFP32("INPUT0", []int64{2, 5}, make([]float32, 10))}})
		want := `model "affine_fp32" input "INPUT0": shape [2 5] does not match [-1 4]`
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), want) {
			t.Errorf("Infer: %v, want INVALID_ARGUMENT %q", err, want)
		}
		if n := counter.n.Load() - sent; n != 0 {
			t.Errorf("%d ModelInfer RPCs left the client, want 0", n)
		}
		if after := inferenceCount(t, c, "affine_fp32"); after != before {
			t.Errorf("affine_fp32 inference_count went from %d to %d", before, after)
		}
	})

	t.Run("typed FP16 refused", func(t *testing.T) {
		_, err := c.Infer(ctx, &triton.InferRequest{Model: "affine_fp16", Typed: true,
			Inputs: []triton.Tensor{triton.NewFP16("INPUT0", []int64{1, 4}, make([]float32, 4))}})
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "no typed contents field") {
			t.Errorf("Infer: %v, want INVALID_ARGUMENT about typed FP16", err)
		}
	})

	t.Run("closed port", func(t *testing.T) {
		tritonAddr(t)
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := lis.Addr().String()
		lis.Close()
		dead, err := triton.Dial(ctx, addr, triton.WithTimeout(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer dead.Close()
		start := time.Now()
		_, err = dead.ModelMetadata(ctx, "affine_fp32", "")
		if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), addr) {
			t.Errorf("ModelMetadata: %v, want UNAVAILABLE naming %s", err, addr)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("took %v, want within the 1s deadline", d)
		}
	})
}

func inferenceCount(t *testing.T, c *triton.Client, model string) uint64 {
	t.Helper()
	stats, err := c.ModelStatistics(context.Background(), model, "")
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, s := range stats {
		n += s.GetInferenceCount()
	}
	return n
}

// rawCodec receives messages as their undecoded bytes.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return proto.Marshal(v.(proto.Message)) }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*(v.(*[]byte)) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

// A configuration read from Triton must re-encode to the same fields, also
// those our .proto files leave out, so the sidecar can serve it unchanged.
func TestTritonModelConfigSurvivesReencoding(t *testing.T) {
	c, _ := dialTriton(t)
	for _, model := range []string{"affine_fp32", "identity_bf16", "runtime_info"} {
		var wire []byte
		err := c.Conn().Invoke(context.Background(), tritonpb.GRPCInferenceService_ModelConfig_FullMethodName,
			&tritonpb.ModelConfigRequest{Name: model}, &wire, grpc.ForceCodec(rawCodec{}))
		if err != nil {
			t.Fatal(err)
		}
		var resp tritonpb.ModelConfigResponse
		if err := proto.Unmarshal(wire, &resp); err != nil {
			t.Fatal(err)
		}
		enc, err := proto.Marshal(&resp)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(triton.Canonical(enc), triton.Canonical(wire)) {
			t.Errorf("%s: ModelConfig re-encodes differently:\n% x\nfrom Triton:\n% x", model, enc, wire)
		}
		t.Logf("%s: %d bytes, %d of them in fields we do not declare", model, len(wire), len(resp.GetConfig().ProtoReflect().GetUnknown()))
	}
}

// Tensors beyond grpc-go's default 4 MiB receive limit go both ways.
func TestTritonLargeTensor(t *testing.T) {
	c, _ := dialTriton(t)
	const rows = 1 << 19 // 8 MiB of FP32
	x := make([]float32, rows*4)
	for i := range x {
		x[i] = float32(i % 1000)
	}
	resp, err := c.Infer(context.Background(), &triton.InferRequest{Model: "affine_fp32", Inputs: []triton.Tensor{triton.NewFP32("INPUT0", []int64{rows, 4}, x)}})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := resp.Output("OUTPUT0")
	got, err := out.FP32()
	if err != nil || len(got) != len(x) {
		t.Fatalf("OUTPUT0: %d values, %v", len(got), err)
	}
	for i, v := range x {
		if got[i] != 2*v+1 {
			t.Fatalf("OUTPUT0[%d] = %v, want %v", i, got[i], 2*v+1)
		}
	}
}
