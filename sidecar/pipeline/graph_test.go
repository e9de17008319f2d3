package pipeline_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/internal/faketriton"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// TestBuildGraphProblems: every problem of a graph-form model is reported
// at once, at its path: the ensemble, the tensor to correct, the model
// that produces it.
func TestBuildGraphProblems(t *testing.T) {
	e := newGraphEnv(t)
	e.fake.Put(&faketriton.Model{Name: "cls_bad", MaxBatchSize: 8, Infer: nil,
		Inputs:  []faketriton.Tensor{{Name: "image", Datatype: "UINT8", Shape: []int64{-1, 3}}},
		Outputs: []faketriton.Tensor{{Name: "out", Datatype: "FP32", Shape: []int64{-1, 2}}},
		Steps: []*tritonpb.ModelEnsembling_Step{
			faketriton.Step("pre", map[string]string{"image": "image"}, map[string]string{"pixels": "pixels"}),
			faketriton.Step("pre", map[string]string{"image": "image"}, map[string]string{"pixels": "pixels"}),
			faketriton.Step("", map[string]string{"x": "ghost"}, map[string]string{"y": "dangling"}),
			faketriton.Step("head_a", map[string]string{"feature": "loop_b"}, map[string]string{"logits": "loop_a"}),
			faketriton.Step("head_b", map[string]string{"feature": "loop_a"}, map[string]string{"logits": "loop_b"}),
		},
	})
	ints := []faketriton.Tensor{{Name: "ids", Datatype: "INT32", Shape: []int64{-1, 4}}}
	e.fake.Put(&faketriton.Model{Name: "tokenize", MaxBatchSize: 8, Inputs: []faketriton.Tensor{{Name: "text", Datatype: "BYTES", Shape: []int64{-1, 1}}}, Outputs: ints})
	e.fake.Put(&faketriton.Model{Name: "embed", MaxBatchSize: 8, Inputs: ints, Outputs: []faketriton.Tensor{{Name: "v", Datatype: "FP32", Shape: []int64{-1, 4}}}})
	e.fake.Put(&faketriton.Model{Name: "cls_int", MaxBatchSize: 8,
		Inputs:  []faketriton.Tensor{{Name: "text", Datatype: "BYTES", Shape: []int64{-1, 1}}},
		Outputs: []faketriton.Tensor{{Name: "v", Datatype: "FP32", Shape: []int64{-1, 4}}},
		Steps: []*tritonpb.ModelEnsembling_Step{
			faketriton.Step("tokenize", map[string]string{"text": "text"}, map[string]string{"ids": "ids"}),
			faketriton.Step("embed", map[string]string{"ids": "ids"}, map[string]string{"v": "v"}),
		},
	})
	one := func(m config.Model) func(*config.Config) {
		return func(c *config.Config) { c.Models = []config.Model{m} }
	}
	tests := []struct {
		name string
		edit func(*config.Config)
		want []wantProblem
	}{
		{"valid", func(*config.Config) {}, nil},
		{"no such ensemble", one(config.Model{Name: "nope", Components: "zoo", Correct: "emb"}),
			[]wantProblem{{path: "models[0].name", msg: `the graph form runs Triton's ensemble of this name: model "nope" is not in the model repository`}}},
		{"not an ensemble", one(config.Model{Name: "head_a", Components: "zoo", Correct: "emb"}),
			[]wantProblem{{path: "models[0].name", msg: `Triton's model "head_a" is not an ensemble (platform "fake")`}}},
		{"unknown tensor", one(config.Model{Name: "cls", Components: "zoo", Correct: "feature"}),
			[]wantProblem{{path: "models[0].correct", msg: `ensemble "cls": no step produces tensor "feature" (tensors: emb, image, index, label, logits_b, mask, pixels, probs, scores_a)`}}},
		{"an input of the ensemble", one(config.Model{Name: "cls", Components: "zoo", Correct: "image"}),
			[]wantProblem{{path: "models[0].correct", msg: `ensemble "cls": tensor "image" is an input of the ensemble, produced by no step`}}},
		{"read by no step", one(config.Model{Name: "cls", Components: "zoo", Correct: "probs"}),
			[]wantProblem{{path: "models[0].correct", msg: `ensemble "cls": no step takes tensor "probs": a correction must be consumed by a step`}}},
		{"not the calibrated backbone, of another width", one(config.Model{Name: "cls", Components: "zoo", Correct: "pixels"}),
			[]wantProblem{
				{path: "models[0].correct", msg: `model "pre" output "pixels" would be corrected with the components of "zoo", calibrated on model "backbone" output "feature"`},
				{path: "models[0].correct", msg: `tensor "pixels" (output "pixels" of step 0 ("pre")) has shape [-1 3], but the components file has D=4`},
			}},
		{"not D wide", one(config.Model{Name: "cls", Components: "zoo", Correct: "scores_a", VariantOf: "backbone"}),
			[]wantProblem{{path: "models[0].correct", msg: `tensor "scores_a" (output "logits" of step 2 ("head_a")) has shape [-1 2], but the components file has D=4`}}},
		{"not a floating-point tensor", one(config.Model{Name: "cls_int", Components: "zoo", Correct: "ids", VariantOf: "backbone"}),
			[]wantProblem{{path: "models[0].correct", msg: `tensor "ids" (output "ids" of step 0 ("tokenize")) is INT32; a feature must be FP32, FP16 or BF16`}}},
		{"a variant named wrongly", one(config.Model{Name: "cls_nb", Components: "zoo", Correct: "emb", VariantOf: "backbone_fp16"}),
			[]wantProblem{{path: "models[0].variant_of", msg: `the components of "zoo" were calibrated on model "backbone", not "backbone_fp16"`}}},
		{"a variant not declared", one(config.Model{Name: "cls_nb", Components: "zoo", Correct: "emb"}),
			[]wantProblem{{path: "models[0].correct", msg: `model "backbone_nb" output "feature" would be corrected with the components of "zoo", calibrated on model "backbone" output "feature": ` +
				`calibrate components on this model, or, if it is a variant of "backbone" (an FP16 copy, a re-export), say so with variant_of: backbone`}}},
		{"a broken graph", one(config.Model{Name: "cls_bad", Components: "zoo", Correct: "dangling"}),
			[]wantProblem{
				{path: "models[0].name", msg: `ensemble "cls_bad": steps step 2 (""), step 3 ("head_a"), step 4 ("head_b") wait for tensors no step before them produces (a cycle, or a tensor nothing makes)`},
				{path: "models[0].correct", msg: `ensemble "cls_bad": no step takes tensor "dangling": a correction must be consumed by a step`},
			}},
		{"a tensor produced twice", one(config.Model{Name: "cls_bad", Components: "zoo", Correct: "pixels"}),
			[]wantProblem{
				{path: "models[0].name", msg: `wait for tensors no step before them produces`},
				{path: "models[0].correct", msg: `ensemble "cls_bad": tensor "pixels" is produced by 2 steps (step 0 ("pre"), step 1 ("pre")): want one; no step takes tensor "pixels": a correction must be consumed by a step`},
			}},
		{"ensemble not ready", func(c *config.Config) { e.fake.SetReady("cls", false) },
			[]wantProblem{{path: "models[0].name", msg: `model "cls" is not ready`, transient: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer e.fake.SetReady("cls", true)
			cfg := e.graphConfig()
			tt.edit(cfg)
			e.checkBuild(t, cfg, tt.want)
		})
	}
}

// TestBuildGraphModel: a graph-form model is the ensemble: its inputs,
// outputs, batching, version, metadata and configuration are Triton's.
func TestBuildGraphModel(t *testing.T) {
	e := newGraphEnv(t)
	set := e.mustBuild(t, e.graphConfig())
	for _, name := range []string{"cls", "cls_nb"} {
		m := set.Models[name]
		if m.Ensemble() != name || m.Version() != "1" {
			t.Errorf("%s: Ensemble %q, Version %q", name, m.Ensemble(), m.Version())
		}
		meta, err := e.up.RPC.ModelMetadata(context.Background(), &tritonpb.ModelMetadataRequest{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(m.Metadata(), meta) {
			t.Errorf("%s: metadata\n%v\nwant Triton's\n%v", name, m.Metadata(), meta)
		}
		cfg, err := e.up.RPC.ModelConfig(context.Background(), &tritonpb.ModelConfigRequest{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(m.Config(), cfg.GetConfig()) {
			t.Errorf("%s: config\n%v\nwant Triton's\n%v", name, m.Config(), cfg.GetConfig())
		}
		if models, _ := m.Dependencies(); len(models) != 1 || models[0] != name {
			t.Errorf("%s: Dependencies %v, want the ensemble", name, models)
		}
	}
	// Another version, with a correction: the sidecar corrects only the
	// one it serves (without one, Triton answers:
	// TestGraphInferForwardsUncorrected).
	req := graphRequest("cls", true, graphImages, graphMasks)
	req.ModelVersion = "2"
	_, err := set.Models["cls"].Infer(context.Background(), e.up, withPreference(req, "a=1"))
	if status.Code(err) != codes.NotFound || !strings.Contains(err.Error(), "version 2 takes no preference (the sidecar corrects version 1") {
		t.Errorf("version 2: %v", err)
	}
}
