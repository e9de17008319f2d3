package pipeline_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/sidecar/internal/faketriton"
	"github.com/mergectl/react-triton/sidecar/pipeline"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// typed makes a fake model answer with typed FP32 contents instead of raw
// contents, as some Triton clients and backends do.
func typed(m *faketriton.Model) *faketriton.Model {
	inner := m.Infer
	m.Infer = func(req *tritonpb.ModelInferRequest) (*tritonpb.ModelInferResponse, error) {
		resp, err := inner(req)
		if err != nil {
			return nil, err
		}
		for i, o := range resp.GetOutputs() {
			v, err := faketriton.Decode(o.GetDatatype(), resp.GetRawOutputContents()[i])
			if err != nil {
				return nil, err
			}
			c := &tritonpb.InferTensorContents{}
			for _, x := range v {
				c.Fp32Contents = append(c.Fp32Contents, float32(x))
			}
			o.Contents = c
		}
		resp.RawOutputContents = nil
		return resp, nil
	}
	return m
}

// TestInferTypedContents: the backbone's and the heads' answers may come
// as typed contents.
func TestInferTypedContents(t *testing.T) {
	sc := faketriton.NewScenario(7, 4, tasks...)
	models := scenarioModels(sc, "FP32", "FP32")
	for _, m := range models {
		typed(m)
	}
	e := newEnv(t, models...)
	m := e.mustBuild(t, e.config()).Models["multi"]
	res, err := m.Infer(context.Background(), e.up, pipeline.Request{Proto: inferRequest("multi", batch),
		Header: control.Values{Preference: "b=1", HasPreference: true}})
	if err != nil {
		t.Fatal(err)
	}
	w := e.sc.Reference(weights(0, 1, 0), e.sc.Beta, false)
	for i, task := range tasks {
		ex := e.expect(task, "FP32", "FP32", w, batch)
		got, _ := faketriton.Decode("FP32", res.Response.GetRawOutputContents()[i])
		if j := within(got, ex.logits, ex.logitsTol); j >= 0 {
			t.Errorf("%s: %v, want %v", task, got, ex.logits)
		}
	}
}

// TestInferBackboneChanged: a backbone replaced on Triton after the build
// (another width, another datatype) is an INTERNAL error that says to
// reload, and no head is called with a feature that does not fit.
func TestInferBackboneChanged(t *testing.T) {
	e := newEnv(t)
	m := e.mustBuild(t, e.config()).Models["single"]
	d5 := [][]float64{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {1, 1, 0}, {0, 1, 1}}
	tests := []struct {
		name  string
		model *faketriton.Model
		msg   string
	}{
		{"width", faketriton.Linear("backbone", "x", "FP32", "feature", "FP32", d5, nil), "D=4"},
		{"datatype", e.sc.BackboneModel("backbone", "FP16"), "reload"},
		{"the same backbone", e.sc.BackboneModel("backbone", "FP32"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.fake.Put(tt.model)
			defer e.fake.Put(e.sc.BackboneModel("backbone", "FP32"))
			before := e.fake.Calls("head_a")
			_, err := m.Infer(context.Background(), e.up, pipeline.Request{Proto: inferRequest("single", batch)})
			if tt.msg == "" {
				if err != nil {
					t.Errorf("the same backbone again: %v", err)
				}
				return
			}
			if st := status.Convert(err); st.Code() != codes.Internal || !strings.Contains(st.Message(), tt.msg) {
				t.Errorf("Infer: %v; want INTERNAL mentioning %q", err, tt.msg)
			}
			if e.fake.Calls("head_a") != before {
				t.Error("a head was called with a feature that does not fit")
			}
		})
	}
}

// TestInferSolveError: a preference whose C_p cannot be factorised (β=0,
// and the only weighted task has fewer samples than D) is the client's
// INVALID_ARGUMENT; other preferences keep working.
func TestInferSolveError(t *testing.T) {
	e := newEnv(t)
	e.sc.Truncate("c", 2)
	e.comps = e.sc.WriteComponents(t, t.TempDir(), "short.safetensors")
	cfg := e.config()
	zero := 0.0
	cfg.Components[0].Beta = &zero
	cfg.Components[0].Presets = nil
	m := e.mustBuild(t, cfg).Models["single"]
	_, err := m.Infer(context.Background(), e.up, pipeline.Request{Proto: inferRequest("single", batch),
		Header: control.Values{Preference: "c=1", HasPreference: true}})
	if st := status.Convert(err); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), "not positive definite") {
		t.Errorf("c=1 with β=0 and N_c=2 < D: %v", err)
	}
	res, err := m.Infer(context.Background(), e.up, pipeline.Request{Proto: inferRequest("single", batch),
		Header: control.Values{Preference: "a=1,b=1", HasPreference: true}})
	if err != nil {
		t.Fatal(err)
	}
	ex := e.expect("a", "FP32", "FP32", e.sc.Reference(weights(0.5, 0.5, 0), 0, false), batch)
	got, _ := faketriton.Decode("FP32", res.Response.GetRawOutputContents()[0])
	if j := within(got, ex.logits, ex.logitsTol); j >= 0 {
		t.Errorf("a=1,b=1 with β=0: %v, want %v", got, ex.logits)
	}
	// A preset that cannot be solved is a Build problem.
	cfg.Components[0].Presets = map[string]string{"bad": "c=1"}
	_, err = e.build(cfg)
	checkProblems(t, err, []wantProblem{{path: "components[0].presets.bad", msg: "not positive definite"}})
}

// TestInferSharedMemoryInput: an input in a shared memory region has no
// raw_input_contents entry. With every input in shared memory the request
// goes to the backbone; mixing inputs in shared memory with inputs
// carrying data is not supported for controllable models (docs/sidecar.md)
// and is refused before Triton is called.
func TestInferSharedMemoryInput(t *testing.T) {
	sc := faketriton.NewScenario(7, 4, tasks...)
	two := &faketriton.Model{Name: "bb_two", MaxBatchSize: 8,
		Inputs: []faketriton.Tensor{
			{Name: "x", Datatype: "FP32", Shape: []int64{-1, 3}},
			{Name: "y", Datatype: "FP32", Shape: []int64{-1, 1}},
		},
		Outputs: []faketriton.Tensor{{Name: "feature", Datatype: "FP32", Shape: []int64{-1, 4}}},
		Infer: func(*tritonpb.ModelInferRequest) (*tritonpb.ModelInferResponse, error) {
			return nil, status.Error(codes.Unimplemented, "fake: no shared memory here")
		},
	}
	e := newEnv(t, append(scenarioModels(sc, "FP32", "FP32"), two)...)
	cfg := e.config()
	cfg.Models = cfg.Models[:1]
	cfg.Models[0].Backbone.Model, cfg.Models[0].VariantOf = "bb_two", "backbone"
	m := e.mustBuild(t, cfg).Models["single"]

	shm := func(size int64) map[string]*tritonpb.InferParameter {
		return map[string]*tritonpb.InferParameter{
			"shared_memory_region":    {ParameterChoice: &tritonpb.InferParameter_StringParam{StringParam: "region"}},
			"shared_memory_byte_size": {ParameterChoice: &tritonpb.InferParameter_Int64Param{Int64Param: size}},
		}
	}
	// Every input in shared memory: Triton's to read.
	all := &tritonpb.ModelInferRequest{
		ModelName: "single",
		Inputs: []*tritonpb.ModelInferRequest_InferInputTensor{
			{Name: "x", Datatype: "FP32", Shape: []int64{2, 3}, Parameters: shm(24)},
			{Name: "y", Datatype: "FP32", Shape: []int64{2, 1}, Parameters: shm(8)},
		},
	}
	before := e.fake.Calls("bb_two")
	_, err := m.Infer(context.Background(), e.up, pipeline.Request{Proto: all})
	if e.fake.Calls("bb_two") != before+1 || status.Code(err) != codes.Unimplemented {
		t.Errorf("every input in shared memory: %v (backbone calls %d); want the backbone's answer", err, e.fake.Calls("bb_two")-before)
	}
	if last := e.fake.LastRequest("bb_two"); len(last.GetRawInputContents()) != 0 || last.GetInputs()[0].GetParameters()["shared_memory_region"] == nil {
		t.Errorf("the backbone received %v", last)
	}

	// Mixed: refused, clearly, before Triton.
	mixed := &tritonpb.ModelInferRequest{
		ModelName: "single",
		Inputs: []*tritonpb.ModelInferRequest_InferInputTensor{
			{Name: "x", Datatype: "FP32", Shape: []int64{2, 3}, Parameters: shm(24)},
			{Name: "y", Datatype: "FP32", Shape: []int64{2, 1}},
		},
		RawInputContents: [][]byte{fp32([]float64{1, 2})},
	}
	before = e.fake.Calls("bb_two")
	_, err = m.Infer(context.Background(), e.up, pipeline.Request{Proto: mixed})
	if status.Code(err) != codes.InvalidArgument || e.fake.Calls("bb_two") != before {
		t.Errorf("inputs in shared memory mixed with data: %v; want INVALID_ARGUMENT before Triton", err)
	}
}
