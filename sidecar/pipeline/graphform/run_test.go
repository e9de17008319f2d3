package graphform_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/sidecar/pipeline/graphform"
	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/ensemble"
	"github.com/mergectl/react-triton/triton/modelinfo"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// newForm returns the form of "cls" correcting emb, produced in dt.
func newForm(t *testing.T, dt string) *graphform.Form {
	t.Helper()
	e, p := graphform.Read(ensembleInfo([]string{"1", "4"}), "emb")
	if p != nil {
		t.Fatal(p)
	}
	f, err := e.Form(producerInfo(dt, d), d)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// images is a batch of two rows of the ensemble's input.
var images = []float32{1, 2, -0.5, 3}

// steps computes the ensemble's steps in float64, as the fake calls of
// fakeSteps do: the backbone maps (a, b) to (a, b, a+b); the head doubles
// its input; post adds 1.
func backbone(x []float32) []float64 {
	var z []float64
	for r := 0; r+1 < len(x); r += 2 {
		a, b := float64(x[r]), float64(x[r+1])
		z = append(z, a, b, a+b)
	}
	return z
}

// corrected multiplies each row of z by w (row-major D×D), in float64.
func corrected(w []float32, z []float64) []float64 {
	out := make([]float64, len(z))
	for r := 0; r < len(z)/d; r++ {
		for i := 0; i < d; i++ {
			for j := 0; j < d; j++ {
				out[r*d+i] += float64(w[i*d+j]) * z[r*d+j]
			}
		}
	}
	return out
}

// fakeSteps answers each step's request as the steps compute, the
// backbone's feature in dt (shape width wide), and records the requests.
type fakeSteps struct {
	dt    string
	width int64
	fail  map[string]error // by model
	mu    sync.Mutex
	got   map[string]*tritonpb.ModelInferRequest
}

func (s *fakeSteps) call(_ context.Context, step int, req *tritonpb.ModelInferRequest) (*tritonpb.ModelInferResponse, error) {
	s.mu.Lock()
	if s.got == nil {
		s.got = map[string]*tritonpb.ModelInferRequest{}
	}
	s.got[req.GetModelName()] = req
	s.mu.Unlock()
	if err := s.fail[req.GetModelName()]; err != nil {
		return nil, err
	}
	in := triton.Tensor{Datatype: req.GetInputs()[0].GetDatatype(), Shape: req.GetInputs()[0].GetShape(), Raw: req.GetRawInputContents()[0]}
	v, err := triton.DecodeFloat32(nil, in.Datatype, in.Raw)
	if err != nil {
		return nil, err
	}
	rows := in.Shape[0]
	var name, dt string
	var out []float32
	switch req.GetModelName() {
	case "backbone":
		name, dt = "feature", s.dt
		for _, x := range backbone(v) {
			out = append(out, float32(x))
		}
		out = append(out, make([]float32, int(rows)*int(s.width-d))...)[:int(rows)*int(s.width)]
	case "head":
		name, dt = "y", "FP32"
		for _, x := range v {
			out = append(out, 2*x)
		}
	case "post":
		name, dt = "p", "FP32"
		for _, x := range v {
			out = append(out, x+1)
		}
	default:
		return nil, fmt.Errorf("step %d: unknown model %q", step, req.GetModelName())
	}
	raw, err := triton.EncodeFloat32(nil, dt, out)
	if err != nil {
		return nil, err
	}
	width := int64(d)
	if name == "feature" {
		width = s.width
	}
	return &tritonpb.ModelInferResponse{ModelName: req.GetModelName(),
		Outputs:           []*tritonpb.ModelInferResponse_InferOutputTensor{{Name: name, Datatype: dt, Shape: []int64{rows, width}}},
		RawOutputContents: [][]byte{raw}}, nil
}

// request returns a request for the batch, raw, asking for outputs.
func request(outputs ...string) *tritonpb.ModelInferRequest {
	req := &tritonpb.ModelInferRequest{ModelName: "cls", Id: "r-1",
		Inputs:           []*tritonpb.ModelInferRequest_InferInputTensor{{Name: "image", Datatype: "FP32", Shape: []int64{2, 2}}},
		RawInputContents: [][]byte{triton.NewFP32("image", []int64{2, 2}, images).Raw}}
	for _, o := range outputs {
		req.Outputs = append(req.Outputs, &tritonpb.ModelInferRequest_InferRequestedOutputTensor{Name: o})
	}
	return req
}

// wp is a W_p that changes every row.
func wp(scale float32) *control.Matrix {
	w := make([]float32, d*d)
	for i := range w {
		w[i] = scale * (float32(i%4) - 1.5)
	}
	return &control.Matrix{Key: "a=1", D: d, W: w}
}

// run runs req through f with w, the steps answered by s.
func run(f *graphform.Form, s *fakeSteps, req *tritonpb.ModelInferRequest, w *control.Matrix) (*tritonpb.ModelInferResponse, graphform.Timing, error) {
	wanted, err := f.Outputs(req.GetOutputs())
	if err != nil {
		return nil, graphform.Timing{}, err
	}
	return f.Run(context.Background(), graphform.Request{Proto: req, Parameters: req.GetParameters(), Outputs: wanted, W: w, Call: s.call})
}

// outputs decodes a response's outputs by name.
func outputs(t *testing.T, resp *tritonpb.ModelInferResponse) map[string][]float32 {
	t.Helper()
	out := map[string][]float32{}
	for i, o := range resp.GetOutputs() {
		v, err := triton.DecodeFloat32(nil, o.GetDatatype(), resp.GetRawOutputContents()[i])
		if err != nil {
			t.Fatalf("%s: %v", o.GetName(), err)
		}
		out[o.GetName()] = v
	}
	return out
}

// near checks got against want within tol, relative to the largest |want|.
func near(t *testing.T, what string, got []float32, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	scale := 1e-6
	for _, v := range want {
		scale = math.Max(scale, math.Abs(v))
	}
	for i := range want {
		if math.Abs(float64(got[i])-want[i]) > tol*scale {
			t.Fatalf("%s: %v, want %v", what, got, want)
		}
	}
}

// TestRun: every output is the ensemble computed with W_p applied to emb
// (by the test, in float64), in the tensor's own datatype; the steps after
// it receive it corrected; the answer names the ensemble, its version and
// the request's id, with the sequence parameters of Triton's ensembles.
func TestRun(t *testing.T) {
	for _, tt := range []struct {
		dt  string
		tol float64
	}{{"FP32", 1e-6}, {"FP16", 2e-3}, {"BF16", 1e-2}} {
		t.Run(tt.dt, func(t *testing.T) {
			f := newForm(t, tt.dt)
			s := &fakeSteps{dt: tt.dt, width: d}
			w := wp(0.5)
			resp, timing, err := run(f, s, request(), w)
			if err != nil {
				t.Fatal(err)
			}
			if resp.GetModelName() != "cls" || resp.GetModelVersion() != "4" || resp.GetId() != "r-1" {
				t.Errorf("answer of %q version %q id %q, want cls 4 r-1", resp.GetModelName(), resp.GetModelVersion(), resp.GetId())
			}
			if names := []string{resp.GetOutputs()[0].GetName(), resp.GetOutputs()[1].GetName(), resp.GetOutputs()[2].GetName()}; strings.Join(names, ",") != "probs,scores,emb" {
				t.Errorf("outputs %v, want the ensemble's, in its order", names)
			}
			if dt := resp.GetOutputs()[2].GetDatatype(); dt != tt.dt {
				t.Errorf("emb is %s, want %s", dt, tt.dt)
			}
			zhat := corrected(w.W, backbone(images))
			got := outputs(t, resp)
			near(t, "emb", got["emb"], zhat, tt.tol)
			scores, probs := make([]float64, len(zhat)), make([]float64, len(zhat))
			for i, v := range zhat {
				scores[i], probs[i] = 2*v, 2*v+1
			}
			near(t, "scores", got["scores"], scores, tt.tol)
			near(t, "probs", got["probs"], probs, tt.tol)
			// The head received emb corrected, in its datatype.
			h := s.got["head"]
			if h.GetInputs()[0].GetDatatype() != tt.dt || h.GetId() != "r-1" || h.GetModelVersion() != "2" {
				t.Errorf("the head's request: %v", h)
			}
			sent, _ := triton.DecodeFloat32(nil, tt.dt, h.GetRawInputContents()[0])
			near(t, "the head's input", sent, zhat, tt.tol)
			p := resp.GetParameters()
			_, isInt := p["sequence_id"].GetParameterChoice().(*tritonpb.InferParameter_Int64Param)
			_, isStart := p["sequence_start"].GetParameterChoice().(*tritonpb.InferParameter_BoolParam)
			_, isEnd := p["sequence_end"].GetParameterChoice().(*tritonpb.InferParameter_BoolParam)
			if len(p) != 3 || !isInt || !isStart || !isEnd || p["sequence_id"].GetInt64Param() != 0 || p["sequence_start"].GetBoolParam() || p["sequence_end"].GetBoolParam() {
				t.Errorf("parameters %v, want sequence_id 0, sequence_start and sequence_end false", p)
			}
			if timing.Before < 0 || timing.Correction <= 0 || timing.After < 0 {
				t.Errorf("timing %+v", timing)
			}
		})
	}
}

// TestRunTiming: a run's time splits into the steps before the corrected
// tensor was ready, its correction and the steps after, which add up to at
// most the run's own time (a correction of 10⁵ rows takes long enough to
// be seen counted twice); outputs that do not depend on the tensor count
// no correction, all of their steps before it.
func TestRunTiming(t *testing.T) {
	timed := func(f *graphform.Form, req *tritonpb.ModelInferRequest) (graphform.Timing, time.Duration) {
		t.Helper()
		wanted, err := f.Outputs(req.GetOutputs())
		if err != nil {
			t.Fatal(err)
		}
		s := &fakeSteps{dt: "FP32", width: d}
		start := time.Now()
		_, timing, err := f.Run(context.Background(), graphform.Request{Proto: req, Outputs: wanted, W: wp(0.5), Call: s.call})
		took := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		return timing, took
	}
	t.Run("corrected", func(t *testing.T) {
		const rows = 100000
		req := request("probs")
		x := make([]float32, 2*rows)
		for i := range x {
			x[i] = float32(i%7) - 3
		}
		req.Inputs[0].Shape = []int64{rows, 2}
		req.RawInputContents = [][]byte{triton.NewFP32("image", []int64{rows, 2}, x).Raw}
		timing, took := timed(newForm(t, "FP32"), req)
		if timing.Before < 0 || timing.Correction <= 0 || timing.After < 0 || timing.Before+timing.Correction+timing.After > took {
			t.Errorf("timing %+v of a run of %v", timing, took)
		}
	})
	t.Run("outputs without the tensor", func(t *testing.T) {
		e, p := graphform.Read(ensembleInfo(nil), "scores")
		if p != nil {
			t.Fatal(p)
		}
		f, err := e.Form(modelinfo.Info{Name: "head", Metadata: &tritonpb.ModelMetadataResponse{Name: "head",
			Outputs: []*tritonpb.ModelMetadataResponse_TensorMetadata{meta("y", "FP32", d)}}}, d)
		if err != nil {
			t.Fatal(err)
		}
		timing, took := timed(f, request("emb"))
		if timing.Before < 0 || timing.Correction != 0 || timing.After < 0 || timing.Before+timing.After > took {
			t.Errorf("timing %+v of a run of %v, want no correction", timing, took)
		}
	})
}

// TestRunOwnsTheCorrectedTensor: the corrected tensor returned as an
// output is the answer's own, not the pooled buffers the next request's
// correction writes.
func TestRunOwnsTheCorrectedTensor(t *testing.T) {
	f := newForm(t, "FP32")
	s := &fakeSteps{dt: "FP32", width: d}
	first, _, err := run(f, s, request("emb"), wp(0.5))
	if err != nil {
		t.Fatal(err)
	}
	kept := bytes.Clone(first.GetRawOutputContents()[0])
	if _, _, err := run(f, s, request("emb"), wp(-2)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.GetRawOutputContents()[0], kept) {
		t.Error("the first answer's emb changed with the second request's correction")
	}
}

// TestRunParameters: the request's parameters go to every step, and its
// sequence parameters come back in the answer.
func TestRunParameters(t *testing.T) {
	f := newForm(t, "FP32")
	s := &fakeSteps{dt: "FP32", width: d}
	req := request("probs")
	req.Parameters = map[string]*tritonpb.InferParameter{
		"sequence_id":    {ParameterChoice: &tritonpb.InferParameter_Int64Param{Int64Param: 7}},
		"sequence_start": {ParameterChoice: &tritonpb.InferParameter_BoolParam{BoolParam: true}},
	}
	resp, _, err := run(f, s, req, wp(1))
	if err != nil {
		t.Fatal(err)
	}
	p := resp.GetParameters()
	if p["sequence_id"].GetInt64Param() != 7 || !p["sequence_start"].GetBoolParam() || p["sequence_end"] == nil || p["sequence_end"].GetBoolParam() {
		t.Errorf("sequence parameters %v, want id 7, start true, end false", p)
	}
	// The last request of the sequence: its end comes back too.
	req.Parameters["sequence_end"] = &tritonpb.InferParameter{ParameterChoice: &tritonpb.InferParameter_BoolParam{BoolParam: true}}
	if resp, _, err = run(f, s, req, wp(1)); err != nil {
		t.Fatal(err)
	}
	if p := resp.GetParameters(); p["sequence_id"].GetInt64Param() != 7 || !p["sequence_start"].GetBoolParam() || !p["sequence_end"].GetBoolParam() {
		t.Errorf("sequence parameters %v, want id 7, start and end true", p)
	}
	for _, model := range []string{"backbone", "head", "post"} {
		if s.got[model].GetParameters()["sequence_id"].GetInt64Param() != 7 {
			t.Errorf("%s got parameters %v", model, s.got[model].GetParameters())
		}
	}
}

// TestRunTypedContents: inputs as typed contents, as a gRPC client may
// send them, are read.
func TestRunTypedContents(t *testing.T) {
	f := newForm(t, "FP32")
	s := &fakeSteps{dt: "FP32", width: d}
	req := request("emb")
	req.RawInputContents = nil
	req.Inputs[0].Contents = &tritonpb.InferTensorContents{Fp32Contents: images}
	w := wp(0.5)
	resp, _, err := run(f, s, req, w)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "emb", outputs(t, resp)["emb"], corrected(w.W, backbone(images)), 1e-6)
}

// TestRunErrors: each failure's status and message.
func TestRunErrors(t *testing.T) {
	tests := []struct {
		name  string
		steps *fakeSteps
		edit  func(*tritonpb.ModelInferRequest)
		code  codes.Code
		msg   string
	}{
		{"the producer's datatype changed", &fakeSteps{dt: "FP16", width: d}, nil, codes.Internal,
			`model "cls": ensemble step 0 ("backbone") returned "feature" as FP16, not FP32 as at load time: reload the sidecar`},
		{"the producer's width changed", &fakeSteps{dt: "FP32", width: d + 1}, nil, codes.Internal,
			`model "cls": ensemble step 0 ("backbone") returned "feature" of shape [2 4]; the components file has D=3`},
		{"a step's status", &fakeSteps{dt: "FP32", width: d, fail: map[string]error{"head": status.Error(codes.ResourceExhausted, "out of memory")}}, nil,
			codes.ResourceExhausted, "out of memory"},
		{"a step's other error", &fakeSteps{dt: "FP32", width: d, fail: map[string]error{"post": errors.New("boom")}}, nil,
			codes.Internal, `model "cls": `},
		{"an input in shared memory", &fakeSteps{dt: "FP32", width: d}, func(r *tritonpb.ModelInferRequest) {
			r.RawInputContents = nil
			r.Inputs[0].Parameters = map[string]*tritonpb.InferParameter{"shared_memory_region": {ParameterChoice: &tritonpb.InferParameter_StringParam{StringParam: "r"}}}
		}, codes.InvalidArgument, `model "cls": input "image": inputs in shared memory are not served with a correction`},
		{"typed contents of FP16, which has none", &fakeSteps{dt: "FP32", width: d}, func(r *tritonpb.ModelInferRequest) {
			r.RawInputContents = nil
			r.Inputs[0].Datatype = "FP16"
			r.Inputs[0].Contents = &tritonpb.InferTensorContents{Fp32Contents: images}
		}, codes.InvalidArgument, `model "cls": input "image": tensor "image": FP16 has no typed contents field`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request()
			if tt.edit != nil {
				tt.edit(req)
			}
			resp, _, err := run(newForm(t, "FP32"), tt.steps, req, wp(1))
			if resp != nil || status.Code(err) != tt.code || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("%v (answer %v), want %v …%s…", err, resp != nil, tt.code, tt.msg)
			}
		})
	}
	// A step that fails with a status fails the run with it as it is.
	s := &fakeSteps{dt: "FP32", width: d, fail: map[string]error{"head": status.Error(codes.Unavailable, "step 1 away")}}
	if _, _, err := run(newForm(t, "FP32"), s, request(), wp(1)); status.Convert(err).Message() != "step 1 away" {
		t.Errorf("%v, want the step's status unchanged", err)
	}
}

// TestOutputs: the outputs a request may ask for, with the parameters
// each is asked with.
func TestOutputs(t *testing.T) {
	f := newForm(t, "FP32")
	classification := map[string]*tritonpb.InferParameter{"classification": {ParameterChoice: &tritonpb.InferParameter_Int64Param{Int64Param: 1}}}
	out := func(name string, params map[string]*tritonpb.InferParameter) *tritonpb.ModelInferRequest_InferRequestedOutputTensor {
		return &tritonpb.ModelInferRequest_InferRequestedOutputTensor{Name: name, Parameters: params}
	}
	tests := []struct {
		name string
		outs []*tritonpb.ModelInferRequest_InferRequestedOutputTensor
		want []ensemble.Output
		msg  string
	}{
		{"none: all, in order", nil, []ensemble.Output{{Name: "probs"}, {Name: "scores"}, {Name: "emb"}}, ""},
		{"classification of a last output", []*tritonpb.ModelInferRequest_InferRequestedOutputTensor{out("emb", nil), out("probs", classification)},
			[]ensemble.Output{{Name: "emb"}, {Name: "probs", Params: classification}}, ""},
		{"unknown", []*tritonpb.ModelInferRequest_InferRequestedOutputTensor{out("image", nil)}, nil, `unknown output "image" (outputs: probs, scores, emb)`},
		{"twice", []*tritonpb.ModelInferRequest_InferRequestedOutputTensor{out("probs", nil), out("probs", nil)}, nil, `output "probs" requested more than once`},
		{"in shared memory", []*tritonpb.ModelInferRequest_InferRequestedOutputTensor{out("probs", map[string]*tritonpb.InferParameter{"shared_memory_byte_size": {}})}, nil,
			`output "probs": outputs in shared memory are not served with a correction`},
		{"classification of a tensor a step reads", []*tritonpb.ModelInferRequest_InferRequestedOutputTensor{out("scores", classification)}, nil,
			`output "scores": its parameters (classification) are not served with a correction when another step reads it`},
		{"classification of the corrected tensor", []*tritonpb.ModelInferRequest_InferRequestedOutputTensor{out("emb", classification)}, nil,
			`output "emb": its parameters (classification)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := f.Outputs(tt.outs)
			if tt.msg != "" {
				if err == nil || !strings.Contains(err.Error(), tt.msg) {
					t.Errorf("%v, want …%s…", err, tt.msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("%v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i].Name != tt.want[i].Name || len(got[i].Params) != len(tt.want[i].Params) {
					t.Errorf("%v, want %v", got, tt.want)
				}
			}
		})
	}
}

// TestOutputsClassificationOfBytes: the classification of a BYTES output
// is refused (Triton's ensemble refuses it; asked of the step's model,
// Triton 2.51 crashes); its data, and the classification of a numeric
// output, are served.
func TestOutputsClassificationOfBytes(t *testing.T) {
	info := ensembleInfo([]string{"1"})
	info.Metadata.Outputs[0].Datatype = "BYTES" // probs
	e, p := graphform.Read(info, "emb")
	if p != nil {
		t.Fatal(p)
	}
	f, err := e.Form(producerInfo("FP32", d), d)
	if err != nil {
		t.Fatal(err)
	}
	classification := map[string]*tritonpb.InferParameter{"classification": {ParameterChoice: &tritonpb.InferParameter_Int64Param{Int64Param: 1}}}
	out := func(name string, params map[string]*tritonpb.InferParameter) []*tritonpb.ModelInferRequest_InferRequestedOutputTensor {
		return []*tritonpb.ModelInferRequest_InferRequestedOutputTensor{{Name: name, Parameters: params}}
	}
	want := `output "probs": classification of a BYTES output is not supported`
	if _, err := f.Outputs(out("probs", classification)); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("classification of BYTES: %v, want …%s…", err, want)
	}
	if _, err := f.Outputs(out("probs", nil)); err != nil {
		t.Errorf("data of BYTES: %v", err)
	}
	if _, err := newForm(t, "FP32").Outputs(out("probs", classification)); err != nil {
		t.Errorf("classification of FP32: %v", err)
	}
}
