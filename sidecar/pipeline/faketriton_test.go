package pipeline_test

import (
	"context"
	"encoding/binary"
	"math"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/internal/faketriton"
	"github.com/mergectl/react-triton/sidecar/modelstats"
	"github.com/mergectl/react-triton/sidecar/pipeline"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// The tests of this package run the pipeline against an in-process fake
// Triton (package faketriton) serving a backbone (x [-1,3] FP32 → feature
// [-1,4]) and one linear head per task a, b and c, built from a scenario
// whose W_p the tests compute on their own in float64.

// tasks are the scenario's tasks.
var tasks = []string{"a", "b", "c"}

// env is one fake Triton with the scenario's models, and what Build needs.
type env struct {
	sc    *faketriton.Scenario
	fake  *faketriton.Server
	comps string // the components file
	up    *pipeline.Upstream
	cache *control.Cache
	stats *modelstats.Registry
}

// models are the fake's models of a standard env: the backbone with the
// feature in featureDT, and heads head_a (FP32), head_b and head_c taking
// the feature in headDT.
func scenarioModels(sc *faketriton.Scenario, featureDT, headDT string) []*faketriton.Model {
	return []*faketriton.Model{
		sc.BackboneModel("backbone", featureDT),
		sc.HeadModel("head_a", "a", "FP32"),
		sc.HeadModel("head_b", "b", headDT),
		sc.HeadModel("head_c", "c", headDT),
	}
}

// newEnv starts a fake Triton serving models (nil: the standard ones with
// FP32 features) and writes the scenario's components file.
func newEnv(t *testing.T, models ...*faketriton.Model) *env {
	t.Helper()
	sc := faketriton.NewScenario(7, 4, tasks...)
	if models == nil {
		models = scenarioModels(sc, "FP32", "FP32")
	}
	e := &env{sc: sc, fake: faketriton.Start(t, models...), stats: &modelstats.Registry{}}
	e.comps = sc.WriteComponents(t, t.TempDir(), "components.safetensors")
	e.up = upstream(t, e.fake.Addr)
	var err error
	if e.cache, err = control.NewCache(16); err != nil {
		t.Fatal(err)
	}
	return e
}

// upstream returns an Upstream to the gRPC server at addr.
func upstream(t testing.TB, addr string) *pipeline.Upstream {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &pipeline.Upstream{RPC: tritonpb.NewGRPCInferenceServiceClient(conn), Addr: addr, Timeout: 10 * time.Second}
}

// config returns the standard configuration: components "zoo" with the
// default preference a=1 and presets b_first and even; models "single"
// (backbone → head_a) and "multi" (backbone → head_a, head_b, head_c, their
// logits renamed logits_a, logits_b, logits_c).
func (e *env) config() *config.Config {
	return &config.Config{
		Triton: config.Triton{GRPC: e.fake.Addr, HTTP: "127.0.0.1:1", Timeout: 10 * time.Second, StartupTimeout: 10 * time.Second},
		Limits: config.Limits{MaxRequestBytes: config.DefaultMaxRequestBytes, MaxPreferenceLength: 64},
		Cache:  config.Cache{Size: 16},
		Components: []config.Components{{
			Name:              "zoo",
			Path:              e.comps,
			DefaultPreference: "a=1",
			Presets:           map[string]string{"b_first": "a=0.2,b=0.8", "even": "a=1,b=1,c=1"},
		}},
		Models: []config.Model{
			{
				Name: "single", Components: "zoo",
				Backbone: config.Backbone{Model: "backbone", Output: "feature"},
				Heads:    []config.Head{{Task: "a", Model: "head_a"}},
			},
			{
				Name: "multi", Components: "zoo",
				Backbone: config.Backbone{Model: "backbone", Output: "feature"},
				Heads: []config.Head{
					{Task: "a", Model: "head_a", Outputs: map[string]string{"logits": "logits_a"}},
					{Task: "b", Model: "head_b", Outputs: map[string]string{"logits": "logits_b"}},
					{Task: "c", Model: "head_c", Outputs: map[string]string{"logits": "logits_c"}},
				},
			},
		},
	}
}

// build builds cfg against the env's Triton.
func (e *env) build(cfg *config.Config) (*pipeline.Set, error) {
	return pipeline.Build(context.Background(), cfg, e.up, pipeline.Options{Cache: e.cache, Stats: e.stats})
}

// mustBuild builds cfg and fails the test on an error.
func (e *env) mustBuild(t *testing.T, cfg *config.Config) *pipeline.Set {
	t.Helper()
	set, err := e.build(cfg)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return set
}

// batch is the test input: rows of x, row-major B×3.
var batch = []float64{
	1, 0, 0,
	0, 1, 0,
	0, 0, 1,
	0.5, -1.5, 2,
	-2, 0.25, -0.75,
}

// fp32 returns v as FP32 raw contents.
func fp32(v []float64) []byte {
	out := make([]byte, 0, 4*len(v))
	for _, x := range v {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(float32(x)))
	}
	return out
}

// inferRequest returns a request for model on the batch x (B×3 FP32, raw).
func inferRequest(model string, x []float64, outputs ...string) *tritonpb.ModelInferRequest {
	req := &tritonpb.ModelInferRequest{
		ModelName:        model,
		Id:               "req-1",
		Inputs:           []*tritonpb.ModelInferRequest_InferInputTensor{{Name: "x", Datatype: "FP32", Shape: []int64{int64(len(x) / 3), 3}}},
		RawInputContents: [][]byte{fp32(x)},
	}
	for _, o := range outputs {
		req.Outputs = append(req.Outputs, &tritonpb.ModelInferRequest_InferRequestedOutputTensor{Name: o})
	}
	return req
}

// stringParam returns a string InferParameter.
func stringParam(s string) *tritonpb.InferParameter {
	return &tritonpb.InferParameter{ParameterChoice: &tritonpb.InferParameter_StringParam{StringParam: s}}
}

// eps is the rounding error of a datatype, relative (half an ulp).
func eps(dt string) float64 {
	switch dt {
	case "FP16":
		return 0x1p-11
	case "BF16":
		return 0x1p-8
	}
	return 0
}

// f32tol is the relative tolerance of the float32 arithmetic on the way
// (W_p rounded to float32, the product in float32).
const f32tol = 1e-5

// expectation is what a head should receive and return for a batch.
type expectation struct {
	feature, featureTol []float64 // what the head receives
	logits, logitsTol   []float64 // what it returns
}

// expect computes, in float64, the corrected feature and the logits of the
// head of task for the batch x: the feature as the fake backbone sends it
// in featureDT, corrected with w (nil: no correction), sent to the head in
// headDT, and the head's logits; with tolerances that allow for float32
// arithmetic and the rounding to headDT.
func (e *env) expect(task, featureDT, headDT string, w [][]float64, x []float64) expectation {
	d := e.sc.D
	z := e.sc.Feature(featureDT, x)
	rows := len(z) / d
	var ex expectation
	zhat := make([]float64, len(z))
	ztol := make([]float64, len(z))
	for r := 0; r < rows; r++ {
		for i := 0; i < d; i++ {
			if w == nil {
				zhat[r*d+i] = z[r*d+i]
				ztol[r*d+i] = eps(headDT) * math.Abs(z[r*d+i])
				continue
			}
			s, mag := 0.0, 0.0
			for j := 0; j < d; j++ {
				s += w[i][j] * z[r*d+j]
				mag += math.Abs(w[i][j] * z[r*d+j])
			}
			zhat[r*d+i] = s
			ztol[r*d+i] = f32tol*mag + eps(headDT)*math.Abs(s) + 1e-7
		}
	}
	h := e.sc.Head(task)
	k := len(h)
	ex.feature, ex.featureTol = zhat, ztol
	ex.logits = make([]float64, rows*k)
	ex.logitsTol = make([]float64, rows*k)
	for r := 0; r < rows; r++ {
		for i := 0; i < k; i++ {
			s, tol := 0.0, 0.0
			for j := 0; j < d; j++ {
				s += h[i][j] * zhat[r*d+j]
				tol += math.Abs(h[i][j]) * (ztol[r*d+j] + f32tol*math.Abs(zhat[r*d+j]))
			}
			ex.logits[r*k+i], ex.logitsTol[r*k+i] = s, tol+1e-7
		}
	}
	return ex
}

// within reports the first index where got is farther from want than tol,
// or -1.
func within(got, want, tol []float64) int {
	if len(got) != len(want) {
		return 0
	}
	for i := range want {
		if !(math.Abs(got[i]-want[i]) <= tol[i]) {
			return i
		}
	}
	return -1
}

// weights returns the weights of a rounded canonical preference over the
// scenario's tasks, written by the test (not parsed by the code).
func weights(a, b, c float64) []float64 { return []float64{a, b, c} }
