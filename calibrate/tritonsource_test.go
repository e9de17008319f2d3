package calibrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"gonum.org/v1/gonum/mat"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/calibrate/pairs"
	"github.com/mergectl/react-triton/calibrate/tritonpairs"
	"github.com/mergectl/react-triton/internal/testutil"
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/componentsfile"
	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// fakeModel is a model of fakeServer: a fixed linear map of the sample,
// z_j = Σ_k x_k w(seed, j, k), of D outputs per sample.
type fakeModel struct {
	inputs   []*tritonpb.ModelMetadataResponse_TensorMetadata
	outputs  []*tritonpb.ModelMetadataResponse_TensorMetadata
	maxBatch int32
	notReady bool
	seed     float64
	versions []string // the versions that answer, in turn
	inferErr error
}

// weight is the fake models' map.
func weight(seed float64, j, k int) float64 { return math.Sin(seed*float64(j+1) + 0.37*float64(k)) }

// fakeServer is an in-process Triton with a few feature models.
type fakeServer struct {
	tritonpb.UnimplementedGRPCInferenceServiceServer
	models map[string]*fakeModel

	// hook, if not nil, is called before each inference with the number
	// of inferences before it, and may fail it.
	hook func(calls int) error

	mu       sync.Mutex
	calls    int
	maxRows  int64
	answered map[string]int
}

func tensorMeta(name, dt string, shape ...int64) *tritonpb.ModelMetadataResponse_TensorMetadata {
	return &tritonpb.ModelMetadataResponse_TensorMetadata{Name: name, Datatype: dt, Shape: shape}
}

// featureModel is a model that takes FP32 [-1,2,3] images and gives D=4
// features as outDT.
func featureModel(seed float64, outDT string) *fakeModel {
	return &fakeModel{
		inputs:   []*tritonpb.ModelMetadataResponse_TensorMetadata{tensorMeta("image", triton.FP32, -1, 2, 3)},
		outputs:  []*tritonpb.ModelMetadataResponse_TensorMetadata{tensorMeta("feature", outDT, -1, 4)},
		maxBatch: 64,
		seed:     seed,
		versions: []string{"1"},
	}
}

func (f *fakeServer) ServerReady(context.Context, *tritonpb.ServerReadyRequest) (*tritonpb.ServerReadyResponse, error) {
	return &tritonpb.ServerReadyResponse{Ready: true}, nil
}

func (f *fakeServer) ModelReady(_ context.Context, r *tritonpb.ModelReadyRequest) (*tritonpb.ModelReadyResponse, error) {
	m, ok := f.models[r.GetName()]
	return &tritonpb.ModelReadyResponse{Ready: ok && !m.notReady && (r.GetVersion() == "" || r.GetVersion() == m.versions[0])}, nil
}

func (f *fakeServer) ModelMetadata(_ context.Context, r *tritonpb.ModelMetadataRequest) (*tritonpb.ModelMetadataResponse, error) {
	m, ok := f.models[r.GetName()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "Request for unknown model: '%s' is not found", r.GetName())
	}
	return &tritonpb.ModelMetadataResponse{Name: r.GetName(), Versions: m.versions[:1], Platform: "fake", Inputs: m.inputs, Outputs: m.outputs}, nil
}

func (f *fakeServer) ModelConfig(_ context.Context, r *tritonpb.ModelConfigRequest) (*tritonpb.ModelConfigResponse, error) {
	m, ok := f.models[r.GetName()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "Request for unknown model: '%s' is not found", r.GetName())
	}
	return &tritonpb.ModelConfigResponse{Config: &tritonpb.ModelConfig{Name: r.GetName(), MaxBatchSize: m.maxBatch}}, nil
}

func (f *fakeServer) ModelInfer(_ context.Context, r *tritonpb.ModelInferRequest) (*tritonpb.ModelInferResponse, error) {
	m, ok := f.models[r.GetModelName()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "unknown model %q", r.GetModelName())
	}
	if m.inferErr != nil {
		return nil, m.inferErr
	}
	if f.hook != nil {
		f.mu.Lock()
		calls := f.calls
		f.mu.Unlock()
		if err := f.hook(calls); err != nil {
			return nil, err
		}
	}
	// Each sample is its inputs' elements one after the other, in the
	// order of the model's metadata, whatever order the request has.
	rows := r.GetInputs()[0].GetShape()[0]
	var parts [][]float64
	for _, want := range m.inputs {
		k := slices.IndexFunc(r.GetInputs(), func(in *tritonpb.ModelInferRequest_InferInputTensor) bool { return in.GetName() == want.GetName() })
		if k < 0 || len(r.GetInputs()) != len(m.inputs) {
			return nil, status.Errorf(codes.InvalidArgument, "want inputs %v", m.inputs)
		}
		in := r.GetInputs()[k]
		if in.GetDatatype() != want.GetDatatype() || in.GetShape()[0] != rows {
			return nil, status.Errorf(codes.InvalidArgument, "input %q: %s %v, want %s", in.GetName(), in.GetDatatype(), in.GetShape(), want.GetDatatype())
		}
		v, err := decodeNumbers(in.GetDatatype(), r.GetRawInputContents()[k])
		if err != nil {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
		parts = append(parts, v)
	}
	var x []float64
	for i := range int(rows) {
		for _, v := range parts {
			per := len(v) / int(rows)
			x = append(x, v[i*per:(i+1)*per]...)
		}
	}
	f.mu.Lock()
	version := m.versions[f.answered[r.GetModelName()]%len(m.versions)]
	f.answered[r.GetModelName()]++
	f.calls++
	f.maxRows = max(f.maxRows, rows)
	f.mu.Unlock()
	out := m.outputs[0]
	d := int(out.GetShape()[1])
	if d < 0 {
		d = 4
	}
	sample := len(x) / int(rows)
	z := make([]float32, int(rows)*d)
	for i := range int(rows) {
		for j := range d {
			var s float64
			for k := range sample {
				s += float64(x[i*sample+k]) * weight(m.seed, j, k)
			}
			z[i*d+j] = float32(s)
		}
	}
	raw, err := triton.EncodeFloat32(nil, out.GetDatatype(), z)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &tritonpb.ModelInferResponse{
		ModelName: r.GetModelName(), ModelVersion: version,
		Outputs:           []*tritonpb.ModelInferResponse_InferOutputTensor{{Name: out.GetName(), Datatype: out.GetDatatype(), Shape: []int64{rows, int64(d)}}},
		RawOutputContents: [][]byte{raw},
	}, nil
}

// decodeNumbers decodes a tensor's raw contents to float64: any numeric
// datatype, and BYTES as encodedDecode does (a preprocessing ensemble).
func decodeNumbers(dt string, raw []byte) ([]float64, error) {
	var v []float64
	switch dt {
	case triton.BYTES:
		f, err := decodeEncoded(nil, dt, raw)
		for _, x := range f {
			v = append(v, float64(x))
		}
		return v, err
	case triton.FP32, triton.FP16, triton.BF16, triton.FP64:
		f, err := triton.DecodeFloat32(nil, dt, raw)
		for _, x := range f {
			v = append(v, float64(x))
		}
		return v, err
	}
	size, ok := triton.ElementSize(dt)
	if !ok || len(raw)%size != 0 {
		return nil, fmt.Errorf("datatype %s: %d bytes", dt, len(raw))
	}
	for off := 0; off < len(raw); off += size {
		var u uint64
		for b := size - 1; b >= 0; b-- {
			u = u<<8 | uint64(raw[off+b])
		}
		switch dt {
		case triton.INT8, triton.INT16, triton.INT32, triton.INT64:
			v = append(v, float64(int64(u<<(64-8*size))>>(64-8*size)))
		default: // UINT*, BOOL
			v = append(v, float64(u))
		}
	}
	return v, nil
}

// startFakeServer serves f on a loopback TCP port and returns its address.
func startFakeServer(t *testing.T, f *fakeServer) string {
	t.Helper()
	f.answered = make(map[string]int)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	tritonpb.RegisterGRPCInferenceServiceServer(srv, f)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// writeInputs writes n samples of shape sample to dir/task.npy and returns
// them, row-major.
func writeInputs(t *testing.T, dir, task string, n int, sample ...int) []float32 {
	t.Helper()
	size := 1
	for _, d := range sample {
		size *= d
	}
	v := make([]float32, n*size)
	for i := range v {
		v[i] = float32(math.Cos(float64(i)*0.7+float64(len(task)))) * 2
	}
	shape := fmt.Sprint(n)
	for _, d := range sample {
		shape += fmt.Sprintf(", %d", d)
	}
	if len(sample) == 0 {
		shape += ","
	}
	raw := make([]byte, 0, 4*len(v))
	for _, x := range v {
		raw = appendFloat32(raw, x)
	}
	rawNPY(t, filepath.Join(dir, task+tritonpairs.InputSuffix), fmt.Sprintf("{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }", shape), raw)
	return v
}

func appendFloat32(b []byte, x float32) []byte {
	u := math.Float32bits(x)
	return append(b, byte(u), byte(u>>8), byte(u>>16), byte(u>>24))
}

// expectedFeatures computes a fake model's features of samples x, sent as
// datatype inDT, with the features rounded through outDT as the server
// sends them.
func expectedFeatures(t *testing.T, m *fakeModel, x []float32, sample int) *mat.Dense {
	t.Helper()
	round := func(dt string, v []float32) []float32 {
		raw, err := triton.EncodeFloat32(nil, dt, v)
		if err != nil {
			t.Fatal(err)
		}
		if v, err = triton.DecodeFloat32(nil, dt, raw); err != nil {
			t.Fatal(err)
		}
		return v
	}
	x = round(m.inputs[0].GetDatatype(), x)
	n, d := len(x)/sample, int(m.outputs[0].GetShape()[1])
	z := make([]float32, n*d)
	for i := range n {
		for j := range d {
			var s float64
			for k := range sample {
				s += float64(x[i*sample+k]) * weight(m.seed, j, k)
			}
			z[i*d+j] = float32(s)
		}
	}
	z = round(m.outputs[0].GetDatatype(), z)
	out := mat.NewDense(n, d, nil)
	for i, v := range z {
		out.Set(i/d, i%d, float64(v))
	}
	return out
}

// fakeZoo is a backbone and two experts: expert_a answers in FP16, and
// expert_b takes FP16 inputs with a variable last dimension and answers in
// BF16 with two outputs.
func fakeZoo() *fakeServer {
	expertB := featureModel(2, triton.BF16)
	expertB.inputs = []*tritonpb.ModelMetadataResponse_TensorMetadata{tensorMeta("pixels", triton.FP16, -1, 2, -1)}
	expertB.outputs = append(expertB.outputs, tensorMeta("logits", triton.FP32, -1, 10))
	merged := featureModel(1, triton.FP32)
	merged.versions = []string{"7"}
	merged.maxBatch = 5
	return &fakeServer{models: map[string]*fakeModel{
		"merged":   merged,
		"expert_a": featureModel(3, triton.FP16),
		"expert_b": expertB,
	}}
}

func TestFitTriton(t *testing.T) {
	f := fakeZoo()
	addr := startFakeServer(t, f)
	dir := t.TempDir()
	x := map[string][]float32{"a": writeInputs(t, dir, "a", 37, 2, 3), "b": writeInputs(t, dir, "b", 4, 2, 3)}
	out := filepath.Join(t.TempDir(), "c.safetensors")
	r := mustRun(t, "fit", "--triton", addr, "--inputs", dir, "--backbone-model", "merged", "--chunk", "8",
		"--expert", "a=expert_a", "--expert", "b=expert_b:1", "--out", out, "--progress", "always")
	if !strings.Contains(r.stdout, "task a: N=37") || !strings.Contains(r.stderr, "37/37") || !strings.Contains(r.stderr, "4/4") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	// --chunk 8, capped by the backbone's max_batch_size of 5.
	if f.maxRows != 5 || f.calls != 2*(8+1) {
		t.Errorf("requests of at most %d rows, %d requests; want 5 and 18", f.maxRows, f.calls)
	}
	c, err := componentsfile.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	// The version that answered is recorded when none was asked for, and
	// the only output (expert_a) or the one named like the backbone's
	// (expert_b, which has two).
	if want := (react.ModelRef{Name: "merged", Version: "7", Output: "feature"}); c.Backbone != want {
		t.Errorf("backbone %+v, want %+v", c.Backbone, want)
	}
	experts := map[string]react.ModelRef{
		"a": {Name: "expert_a", Version: "1", Output: "feature"},
		"b": {Name: "expert_b", Version: "1", Output: "feature"},
	}
	for _, ts := range c.Tasks {
		if ts.Expert != experts[ts.Name] {
			t.Errorf("task %s: expert %+v, want %+v", ts.Name, ts.Expert, experts[ts.Name])
		}
		mtl := expectedFeatures(t, f.models["merged"], x[ts.Name], 6)
		ind := expectedFeatures(t, f.models["expert_"+ts.Name], x[ts.Name], 6)
		var s, g mat.Dense
		s.Mul(ind.T(), mtl)
		g.Mul(mtl.T(), mtl)
		if n, _ := mtl.Dims(); ts.N != int64(n) {
			t.Errorf("task %s: N=%d, want %d", ts.Name, ts.N, n)
		}
		if !mat.EqualApprox(ts.S, &s, 1e-9) || !mat.EqualApprox(ts.G, &g, 1e-9) {
			t.Errorf("task %s: S or G differs from the models' features", ts.Name)
		}
	}
}

func TestFitTritonRefuses(t *testing.T) {
	good := func(t *testing.T, dir string) {
		writeInputs(t, dir, "a", 9, 2, 3)
		writeInputs(t, dir, "b", 3, 2, 3)
	}
	experts := []string{"--expert", "a=expert_a", "--expert", "b=expert_b"}
	for _, tc := range []struct {
		name   string
		models func(f *fakeServer)
		setup  func(t *testing.T, dir string)
		args   []string
		code   int
		want   []string
	}{
		{"unreachable", nil, good, []string{"--triton", "CLOSED"}, ExitFailure,
			[]string{"connecting to Triton: triton at 127.0.0.1:", "Unavailable", "connection refused"}},
		{"backbone unknown", nil, good, []string{"--backbone-model", "nope"}, ExitFailure,
			[]string{`backbone: model "nope" is not ready on Triton 127.0.0.1:`}},
		{"expert not ready", func(f *fakeServer) { f.models["expert_b"].notReady = true }, good, nil, ExitFailure,
			[]string{`expert of task b: model "expert_b" is not ready`}},
		{"version not served", nil, good, []string{"--backbone-version", "2"}, ExitFailure,
			[]string{`backbone: model "merged" version 2 is not ready`}},
		{"expert missing", nil, good, []string{"--expert", "a=expert_a"}, ExitUsage,
			[]string{"--expert: no expert for task b: give --expert task=model for every task"}},
		{"expert of a task without inputs", nil, good, []string{"--expert", "a=expert_a", "--expert", "b=expert_b", "--expert", "c=expert_a"}, ExitUsage,
			[]string{"--expert: task c has no calibration inputs among the tasks fitted (a, b)"}},
		{"two inputs", func(f *fakeServer) {
			f.models["merged"].inputs = append(f.models["merged"].inputs, tensorMeta("mask", triton.BOOL, -1, 2, 3))
		}, good, nil, ExitFailure, []string{`backbone model "merged": has 2 inputs ("image" FP32 [-1 2 3], "mask" BOOL [-1 2 3])`}},
		{"integer input", func(f *fakeServer) { f.models["expert_a"].inputs[0].Datatype = triton.INT32 }, good, nil, ExitFailure,
			[]string{`expert of task a model "expert_a": input "image" has datatype INT32, but `, `a.npy holds FP32: save it as numpy.int32`}},
		{"no batch dimension", func(f *fakeServer) { f.models["merged"].inputs[0].Shape = []int64{2, 3} }, good, nil, ExitFailure,
			[]string{`input "image" has shape [2 3]: want a batch dimension first`}},
		{"input shape", func(f *fakeServer) { f.models["expert_b"].inputs[0].Shape = []int64{-1, 3, 2} }, good, nil, ExitFailure,
			[]string{"task b:", `input "pixels" takes samples of shape [3 2], not [2 3] (`, "b.npy)"}},
		{"input rank", nil, func(t *testing.T, dir string) {
			writeInputs(t, dir, "a", 9, 6)
			writeInputs(t, dir, "b", 3, 2, 3)
		}, nil, ExitFailure, []string{"takes samples of shape [2 3], not [6] (", "a.npy)"}},
		{"no such output", nil, good, []string{"--backbone-output", "emb"}, ExitFailure,
			[]string{`backbone: model "merged" has no output "emb" (outputs: feature)`}},
		{"ambiguous output", func(f *fakeServer) {
			f.models["expert_b"].outputs[0].Name = "feat"
		}, good, nil, ExitFailure, []string{`expert of task b: model "expert_b" has 2 outputs (feat, logits): name the one to use`}},
		{"integer output", func(f *fakeServer) { f.models["merged"].outputs[0].Datatype = triton.INT64 }, good, nil, ExitFailure,
			[]string{`output "feature" is INT64; a feature must be FP32, FP16 or BF16`}},
		{"FP64 output", func(f *fakeServer) { f.models["expert_a"].outputs[0].Datatype = triton.FP64 }, good, nil, ExitFailure,
			[]string{`expert of task a: model "expert_a" output "feature" is FP64; a feature must be FP32, FP16 or BF16`}},
		{"variable D", func(f *fakeServer) { f.models["merged"].outputs[0].Shape = []int64{-1, -1} }, good, nil, ExitFailure,
			[]string{`output "feature" has shape [-1 -1]: the feature must have a fixed size`}},
		{"different D", nil, good, []string{"--expert", "a=expert_a", "--expert", "b=expert_b:1:logits"}, ExitFailure,
			[]string{`task b: expert model "expert_b" version 1 gives features of D=10 (output "logits") but backbone model "merged" gives D=4 (output "feature")`}},
		{"no inputs", nil, func(t *testing.T, dir string) {}, nil, ExitFailure, []string{"no calibration inputs in", "want <task>.npy files"}},
		{"listed task without inputs", nil, good, []string{"--tasks", "a,z", "--expert", "a=expert_a", "--expert", "z=expert_a"}, ExitFailure,
			[]string{"task z:", "no calibration inputs: neither ", "z.npy, ", "z.npz nor a folder ", "z/ of images"}},
		{"complex inputs", nil, func(t *testing.T, dir string) {
			good(t, dir)
			rawNPY(t, filepath.Join(dir, "a.npy"), "{'descr': '<c8', 'fortran_order': False, 'shape': (2, 2, 3), }", make([]byte, 96))
		}, nil, ExitFailure, []string{`a.npy: dtype "<c8" has no Triton datatype`}},
		{"integer inputs for a float model", nil, func(t *testing.T, dir string) {
			good(t, dir)
			rawNPY(t, filepath.Join(dir, "a.npy"), "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 2, 3), }", make([]byte, 12))
		}, nil, ExitFailure, []string{`input "image" has datatype FP32, but `, `a.npy holds UINT8: save it as numpy.float32`}},
		{"1-D inputs", nil, func(t *testing.T, dir string) {
			good(t, dir)
			rawNPY(t, filepath.Join(dir, "a.npy"), "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", make([]byte, 24))
		}, nil, ExitFailure, []string{"a.npy: array has shape [6]: want N samples along the first axis"}},
		{"no samples", nil, func(t *testing.T, dir string) {
			good(t, dir)
			rawNPY(t, filepath.Join(dir, "a.npy"), "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 2, 3), }", nil)
		}, nil, ExitFailure, []string{"a.npy: array has no samples"}},
		{"truncated inputs", nil, func(t *testing.T, dir string) {
			good(t, dir)
			path := filepath.Join(dir, "b.npy")
			b, _ := os.ReadFile(path)
			os.WriteFile(path, b[:len(b)-3], 0o644)
		}, nil, ExitFailure, []string{"b.npy: file is truncated"}},
		{"fortran inputs", nil, func(t *testing.T, dir string) {
			good(t, dir)
			rawNPY(t, filepath.Join(dir, "a.npy"), "{'descr': '<f4', 'fortran_order': True, 'shape': (1, 2, 3), }", make([]byte, 24))
		}, nil, ExitFailure, []string{"a.npy: array is in Fortran"}},
		{"invalid task file name", nil, func(t *testing.T, dir string) {
			good(t, dir)
			writeInputs(t, dir, "a.merged", 2, 2, 3)
		}, nil, ExitFailure, []string{`invalid task name "a.merged"`}},
		{"inference fails", func(f *fakeServer) {
			f.models["expert_b"].inferErr = status.Error(codes.Internal, "out of memory")
		}, good, nil, ExitFailure, []string{`task b: expert of task b model "expert_b": samples 0 to 3 of`, "Internal", "out of memory"}},
		{"version changes", func(f *fakeServer) { f.models["expert_a"].versions = []string{"1", "2"} }, good, []string{"--chunk", "4"}, ExitFailure,
			[]string{`expert of task a model "expert_a" answered as version `, "the model changed during calibration"}},
		{"backbone version changes between tasks", func(f *fakeServer) { f.models["merged"].versions = []string{"7", "7", "8"} }, good, nil, ExitFailure,
			[]string{`task b: backbone model "merged" answered as version 8, but as version 7 for task a: the model changed during calibration`}},
		{"no source", nil, good, []string{"--triton", ""}, ExitUsage, []string{"triton.grpc: required: give triton.grpc (--triton HOST:PORT) and inputs, or embeddings (--embeddings DIR) (from --triton)"}},
		{"both sources", nil, good, []string{"--embeddings", "x"}, ExitUsage, []string{"embeddings: excludes triton.grpc", "(from --embeddings)"}},
		{"no inputs flag", nil, good, []string{"--inputs", ""}, ExitUsage, []string{"inputs: required with triton.grpc: the directory of each task's calibration inputs, <task>.npy or a folder <task>/ of images (from --inputs)"}},
		{"negative chunk", nil, good, []string{"--chunk", "-1"}, ExitUsage, []string{"chunk: must be ≥ 0 (0 for the default), got -1 (from --chunk)"}},
		{"no backbone", nil, good, []string{"--backbone-model", ""}, ExitUsage, []string{"backbone.model: required with triton.grpc: the merged backbone to run (from --backbone-model)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := fakeZoo()
			if tc.models != nil {
				tc.models(f)
			}
			addr := startFakeServer(t, f)
			dir := t.TempDir()
			tc.setup(t, dir)
			outDir := t.TempDir()
			args := []string{"fit", "--triton", addr, "--inputs", dir, "--backbone-model", "merged",
				"--out", filepath.Join(outDir, "c.safetensors")}
			if !slices.Contains(tc.args, "--expert") { // else the case names its own experts
				args = append(args, experts...)
			}
			for _, a := range tc.args {
				if a == "CLOSED" {
					a = testutil.ClosedAddr(t)
				}
				args = append(args, a)
			}
			checkFailedFit(t, run(t, args...), tc.code, tc.want, outDir)
		})
	}
}

// TestTritonPairClose checks that closing a source in the middle of a task
// cancels its requests and returns, with chunks still in flight.
func TestTritonPairClose(t *testing.T) {
	f := fakeZoo()
	addr := startFakeServer(t, f)
	dir := t.TempDir()
	writeInputs(t, dir, "a", 200, 2, 3)
	c, err := triton.Dial(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ps, err := tritonpairs.Open(context.Background(), c, tritonpairs.Config{
		Inputs: dir, Backbone: react.ModelRef{Name: "merged"},
		Experts: map[string]react.ModelRef{"a": {Name: "expert_a"}}, Batch: 2, InFlight: 3,
	})
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	if p.Len() != 200 || p.Dim() != 4 || p.BatchSize() != 2 || p.Task() != "a" {
		t.Errorf("Len %d Dim %d BatchSize %d Task %s", p.Len(), p.Dim(), p.BatchSize(), p.Task())
	}
	// Room for 3 pairs: a 2-row chunk, then the next.
	mtl, ind := make([]float64, 3*4), make([]float64, 3*4)
	for _, want := range []int{2, 2} {
		if n, err := p.Next(mtl, ind); n != want || err != nil {
			t.Fatalf("Next = %d, %v; want %d", n, err, want)
		}
	}
	// Room for 1 pair: a chunk is handed out over two calls.
	if n, err := p.Next(mtl[:4], ind[:4]); n != 1 || err != nil {
		t.Fatalf("Next = %d, %v; want 1", n, err)
	}
	if n, err := p.Next(mtl[:4], ind[:4]); n != 1 || err != nil {
		t.Fatalf("Next = %d, %v; want 1", n, err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	calls := f.calls
	f.mu.Unlock()
	if calls >= 2*100 {
		t.Errorf("%d requests after Close in the middle of the task: it did not stop", calls)
	}
}

// TestTritonPairAccumulate runs a Triton source through Accumulate to its end.
func TestTritonPairAccumulate(t *testing.T) {
	f := fakeZoo()
	addr := startFakeServer(t, f)
	dir := t.TempDir()
	x := writeInputs(t, dir, "a", 23, 2, 3)
	c, err := triton.Dial(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ps, err := tritonpairs.Open(context.Background(), c, tritonpairs.Config{
		Inputs: dir, Tasks: []string{"a"}, Backbone: react.ModelRef{Name: "merged", Output: "feature"},
		Experts: map[string]react.ModelRef{"a": {Name: "expert_a"}}, InFlight: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ps[0].Close()
	acc, err := pairs.Accumulate(ps[0], 7, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := ps[0].Next(make([]float64, 4), make([]float64, 4)); n != 0 || !errors.Is(err, io.EOF) {
		t.Errorf("Next after the end = %d, %v; want 0, EOF", n, err)
	}
	st, err := acc.Stats("a", ps[0].Expert())
	if err != nil {
		t.Fatal(err)
	}
	mtl := expectedFeatures(t, f.models["merged"], x, 6)
	var g mat.Dense
	g.Mul(mtl.T(), mtl)
	if st.N != 23 || !mat.EqualApprox(st.G, &g, 1e-9) {
		t.Errorf("N=%d, or G differs", st.N)
	}
}
