package graphform_test

import (
	"strings"
	"testing"

	"github.com/mergectl/react-triton/sidecar/pipeline/graphform"
	"github.com/mergectl/react-triton/triton/modelinfo"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// The tests' ensemble "cls", D = 3:
//
//	image FP32 ─► backbone ─► emb FP32 (corrected) ─► head (version 2) ─► scores ─► post ─► probs
//
// Its outputs, in its metadata's order: probs, scores, emb.
const d = 3

func step(model string, version int64, in, out map[string]string) *tritonpb.ModelEnsembling_Step {
	return &tritonpb.ModelEnsembling_Step{ModelName: model, ModelVersion: version, InputMap: in, OutputMap: out}
}

func meta(name, dt string, dims ...int64) *tritonpb.ModelMetadataResponse_TensorMetadata {
	return &tritonpb.ModelMetadataResponse_TensorMetadata{Name: name, Datatype: dt, Shape: append([]int64{-1}, dims...)}
}

// ensembleInfo returns Triton's answers about "cls" with steps, serving
// versions.
func ensembleInfo(versions []string, steps ...*tritonpb.ModelEnsembling_Step) modelinfo.Info {
	if steps == nil {
		steps = []*tritonpb.ModelEnsembling_Step{
			step("backbone", -1, map[string]string{"x": "image"}, map[string]string{"feature": "emb"}),
			step("head", 2, map[string]string{"z": "emb"}, map[string]string{"y": "scores"}),
			step("post", -1, map[string]string{"s": "scores"}, map[string]string{"p": "probs"}),
		}
	}
	return modelinfo.Info{
		Name: "cls",
		Metadata: &tritonpb.ModelMetadataResponse{Name: "cls", Versions: versions,
			Inputs:  []*tritonpb.ModelMetadataResponse_TensorMetadata{meta("image", "FP32", 2)},
			Outputs: []*tritonpb.ModelMetadataResponse_TensorMetadata{meta("probs", "FP32", d), meta("scores", "FP32", d), meta("emb", "FP32", d)}},
		Config: &tritonpb.ModelConfig{Name: "cls", Platform: "ensemble", MaxBatchSize: 8,
			Input:            []*tritonpb.ModelInput{{Name: "image"}},
			Output:           []*tritonpb.ModelOutput{{Name: "probs"}, {Name: "scores"}, {Name: "emb"}},
			SchedulingChoice: &tritonpb.ModelConfig_EnsembleScheduling{EnsembleScheduling: &tritonpb.ModelEnsembling{Step: steps}}},
	}
}

// producerInfo returns Triton's answers about the backbone, whose output
// feature is dt of the given dimensions after the batch.
func producerInfo(dt string, dims ...int64) modelinfo.Info {
	return modelinfo.Info{Name: "backbone", Metadata: &tritonpb.ModelMetadataResponse{Name: "backbone",
		Outputs: []*tritonpb.ModelMetadataResponse_TensorMetadata{meta("feature", dt, dims...)}}}
}

// TestRead: the ensemble's problems, every one at once, at "name" or
// "correct"; a good one's version and producing step.
func TestRead(t *testing.T) {
	notEnsemble := ensembleInfo(nil)
	notEnsemble.Config.Platform = "onnxruntime_onnx"
	cycle := ensembleInfo(nil,
		step("a", -1, map[string]string{"x": "loop_b"}, map[string]string{"y": "loop_a"}),
		step("b", -1, map[string]string{"x": "loop_a"}, map[string]string{"y": "loop_b"}))
	type problem struct{ path, msg string }
	tests := []struct {
		name    string
		ens     modelinfo.Info
		correct string
		want    []problem
	}{
		{"not an ensemble", notEnsemble, "emb", []problem{{"name", `Triton's model "cls" is not an ensemble (platform "onnxruntime_onnx")`}}},
		{"unknown tensor", ensembleInfo(nil), "feature", []problem{{"correct", `ensemble "cls": no step produces tensor "feature" (tensors: emb, image, probs, scores)`}}},
		{"an input of the ensemble", ensembleInfo(nil), "image", []problem{{"correct", `ensemble "cls": tensor "image" is an input of the ensemble`}}},
		{"read by no step", ensembleInfo(nil), "probs", []problem{{"correct", `ensemble "cls": no step takes tensor "probs"`}}},
		{"a cycle, and the tensor fine", cycle, "loop_a", []problem{{"name", `ensemble "cls": steps step 0 ("a"), step 1 ("b") wait for tensors`}}},
		{"a cycle, and the tensor wrong", cycle, "nope", []problem{
			{"name", `wait for tensors no step before them produces`},
			{"correct", `ensemble "cls": no step produces tensor "nope"`},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, got := graphform.Read(tt.ens, tt.correct)
			if e != nil {
				t.Error("an Ensemble despite problems")
			}
			if len(got) != len(tt.want) {
				t.Fatalf("problems %v, want %d", got, len(tt.want))
			}
			for i, w := range tt.want {
				if got[i].Path != w.path || !strings.Contains(got[i].Msg, w.msg) || got[i].Transient {
					t.Errorf("problem %d: %s: %s (transient %v), want %s: …%s…", i, got[i].Path, got[i].Msg, got[i].Transient, w.path, w.msg)
				}
			}
		})
	}

	for _, tt := range []struct {
		versions []string
		want     string
	}{{nil, "1"}, {[]string{"1", "3", "2"}, "3"}, {[]string{"2", "x"}, "2"}} {
		e, p := graphform.Read(ensembleInfo(tt.versions), "emb")
		if p != nil || e == nil {
			t.Fatalf("versions %v: %v", tt.versions, p)
		}
		if e.Version() != tt.want {
			t.Errorf("versions %v: Version %q, want %q (the highest)", tt.versions, e.Version(), tt.want)
		}
	}

	e, _ := graphform.Read(ensembleInfo(nil), "scores")
	if model, version, output := e.Producer(); model != "head" || version != "2" || output != "y" {
		t.Errorf("Producer of scores: %q %q %q, want head 2 y", model, version, output)
	}
	e, _ = graphform.Read(ensembleInfo(nil), "emb")
	if model, version, output := e.Producer(); model != "backbone" || version != "" || output != "feature" {
		t.Errorf("Producer of emb: %q %q %q, want backbone, Triton's version, feature", model, version, output)
	}
	if s := e.Source(); s != `step 0 ("backbone"), whose output "feature" is the tensor "emb"` {
		t.Errorf("Source %q", s)
	}
	// A step without model_version (0, as Triton reads an unset one) is
	// Triton's choice too, never version "0".
	e, _ = graphform.Read(ensembleInfo(nil,
		step("backbone", 0, map[string]string{"x": "image"}, map[string]string{"feature": "emb"}),
		step("head", 2, map[string]string{"z": "emb"}, map[string]string{"y": "scores"})), "emb")
	if model, version, _ := e.Producer(); model != "backbone" || version != "" {
		t.Errorf("Producer of emb, model_version unset: %q %q, want backbone, Triton's version", model, version)
	}
}

// TestForm: the corrected tensor, as its producer declares it, is a
// feature D wide.
func TestForm(t *testing.T) {
	e, p := graphform.Read(ensembleInfo(nil), "emb")
	if p != nil {
		t.Fatal(p)
	}
	tests := []struct {
		name     string
		producer modelinfo.Info
		msg      string // "" for none
	}{
		{"FP32", producerInfo("FP32", d), ""},
		{"BF16", producerInfo("BF16", d), ""},
		{"a variable last dimension", producerInfo("FP16", -1), ""},
		{"no such output", modelinfo.Info{Name: "backbone", Metadata: &tritonpb.ModelMetadataResponse{
			Outputs: []*tritonpb.ModelMetadataResponse_TensorMetadata{meta("other", "FP32", d), meta("more", "FP32", d)}}},
			`step 0 ("backbone"), whose output "feature" is the tensor "emb": `},
		{"not a feature datatype", producerInfo("INT32", d), `tensor "emb" (output "feature" of step 0 ("backbone")) is INT32; a feature must be FP32, FP16 or BF16`},
		{"another width", producerInfo("FP32", d+1), `tensor "emb" (output "feature" of step 0 ("backbone")) has shape [-1 4], but the components file has D=3`},
		{"no dimensions", modelinfo.Info{Name: "backbone", Metadata: &tritonpb.ModelMetadataResponse{
			Outputs: []*tritonpb.ModelMetadataResponse_TensorMetadata{{Name: "feature", Datatype: "FP32"}}}},
			`has shape [], but the components file has D=3`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := e.Form(tt.producer, d)
			switch {
			case tt.msg == "" && (err != nil || f == nil):
				t.Errorf("Form: %v", err)
			case tt.msg != "" && (err == nil || !strings.Contains(err.Error(), tt.msg)):
				t.Errorf("Form: %v, want …%s…", err, tt.msg)
			case tt.msg != "" && f != nil:
				t.Error("a Form despite the error")
			}
		})
	}
}
