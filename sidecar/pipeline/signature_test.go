package pipeline_test

import (
	"context"
	"testing"

	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/internal/faketriton"
)

// shadowed returns a Triton model named like the explicit model "single",
// as an ensemble would describe it.
func shadowed(maxBatch int32, inputs, outputs []faketriton.Tensor) *faketriton.Model {
	return &faketriton.Model{Name: "single", MaxBatchSize: maxBatch, Inputs: inputs, Outputs: outputs, Platform: "ensemble"}
}

// TestBuildSignature: a controllable model that shadows a Triton model
// must serve its signature (input and output names, datatypes and shapes,
// max_batch_size), names its platform in its metadata, and every
// difference is a problem,
// unless the configuration says signature: differs (then it is the
// sidecar's own model, platform react); inputs and outputs can be renamed
// to match.
func TestBuildSignature(t *testing.T) {
	x := faketriton.Tensor{Name: "x", Datatype: "FP32", Shape: []int64{-1, 3}}
	logits := faketriton.Tensor{Name: "logits", Datatype: "FP32", Shape: []int64{-1, 2}}
	image := faketriton.Tensor{Name: "image", Datatype: "FP32", Shape: []int64{-1, 3}}
	scores := faketriton.Tensor{Name: "scores", Datatype: "FP32", Shape: []int64{-1, 2}}
	single := func(f func(m *config.Model)) func(*config.Config) {
		return func(c *config.Config) {
			c.Models = c.Models[:1]
			f(&c.Models[0])
		}
	}
	const hint = "(rename inputs and outputs to match, or set signature: differs if the change is intended)"
	tests := []struct {
		name   string
		shadow *faketriton.Model // nil: Triton has no model "single"
		edit   func(*config.Config)
		want   []wantProblem
	}{
		{"nothing shadowed", nil, func(*config.Config) {}, nil},
		{"the same signature", shadowed(8, []faketriton.Tensor{x}, []faketriton.Tensor{logits}), func(*config.Config) {}, nil},
		{"every difference", shadowed(4,
			[]faketriton.Tensor{{Name: "x", Datatype: "FP16", Shape: []int64{-1, 3}}, {Name: "mask", Datatype: "INT64", Shape: []int64{-1, 3}}},
			[]faketriton.Tensor{scores}), func(*config.Config) {},
			[]wantProblem{
				{path: "models[0].name", msg: `input "x" is served as FP32 [-1 3], where Triton's "single" has FP16 [-1 3] ` + hint},
				{path: "models[0].name", msg: `input "mask" of Triton's "single" is not served (inputs served: x) ` + hint},
				{path: "models[0].name", msg: `output "logits" is served, but Triton's "single" has no such output (its outputs: scores) ` + hint},
				{path: "models[0].name", msg: `output "scores" of Triton's "single" is not served (outputs served: logits) ` + hint},
				{path: "models[0].name", msg: `max_batch_size 8, where Triton's "single" has 4 ` + hint},
			}},
		{"a shape", shadowed(8, []faketriton.Tensor{{Name: "x", Datatype: "FP32", Shape: []int64{-1, -1}}}, []faketriton.Tensor{logits}),
			func(*config.Config) {},
			[]wantProblem{{path: "models[0].name", msg: `input "x" is served as FP32 [-1 3], where Triton's "single" has FP32 [-1 -1]`}}},
		{"a difference declared", shadowed(4, []faketriton.Tensor{image}, []faketriton.Tensor{scores}),
			single(func(m *config.Model) { m.Signature = config.SignatureDiffers }), nil},
		{"renamed to match", shadowed(8, []faketriton.Tensor{image}, []faketriton.Tensor{scores}),
			single(func(m *config.Model) {
				m.Inputs = map[string]string{"x": "image"}
				m.Heads[0].Outputs = map[string]string{"logits": "scores"}
			}), nil},
		{"renaming an input the backbone lacks", nil,
			single(func(m *config.Model) { m.Inputs = map[string]string{"pixel_values": "image"} }),
			[]wantProblem{{path: "models[0].inputs.pixel_values", msg: `model "backbone" has no input "pixel_values" (inputs: x)`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			if tt.shadow != nil {
				e.fake.Put(tt.shadow)
			}
			cfg := e.config()
			cfg.Models = cfg.Models[:1]
			tt.edit(cfg)
			set, err := e.build(cfg)
			if tt.want != nil {
				checkProblems(t, err, tt.want)
				return
			}
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			m := set.Models["single"]
			wantPlatform := "react"
			if tt.shadow != nil && cfg.Models[0].Signature != config.SignatureDiffers {
				wantPlatform = "ensemble"
			}
			// The configuration stays the sidecar's own: no ensemble
			// steps, so no "ensemble" platform.
			if m.Metadata().GetPlatform() != wantPlatform || m.Config().GetPlatform() != "react" || m.Config().GetBackend() != "react" {
				t.Errorf("metadata platform %q, config platform %q backend %q; want %q, react, react",
					m.Metadata().GetPlatform(), m.Config().GetPlatform(), m.Config().GetBackend(), wantPlatform)
			}
		})
	}
}

// TestInferRenamedInputs: a client sends a renamed input under its new
// name, and the backbone receives it under its own; the metadata and
// configuration list the new names.
func TestInferRenamedInputs(t *testing.T) {
	e := newEnv(t)
	cfg := e.config()
	cfg.Models = cfg.Models[:1]
	cfg.Models[0].Inputs = map[string]string{"x": "image"}
	cfg.Models[0].Heads[0].Outputs = map[string]string{"logits": "scores"}
	m := e.mustBuild(t, cfg).Models["single"]
	if in := m.Metadata().GetInputs(); len(in) != 1 || in[0].GetName() != "image" {
		t.Errorf("metadata inputs %v", in)
	}
	if in := m.Config().GetInput(); len(in) != 1 || in[0].GetName() != "image" || len(in[0].GetDims()) != 1 {
		t.Errorf("config inputs %v", in)
	}
	req := inferRequest("single", batch)
	if _, err := m.Infer(context.Background(), e.up, graphRequestOf(req)); err == nil {
		t.Error("the backbone's own input name was accepted")
	}
	req.Inputs[0].Name = "image"
	res, err := m.Infer(context.Background(), e.up, withPreference(req, "a=1"))
	if err != nil {
		t.Fatal(err)
	}
	if got := e.fake.LastRequest("backbone").GetInputs(); len(got) != 1 || got[0].GetName() != "x" {
		t.Errorf("the backbone received %v, want x", got)
	}
	if req.Inputs[0].GetName() != "image" {
		t.Error("Infer changed the client's request")
	}
	ex := e.expect("a", "FP32", "FP32", e.sc.Reference(weights(1, 0, 0), e.sc.Beta, false), batch)
	out := decoded(t, res.Response)["scores"]
	got, err := out.FP32()
	if err != nil {
		t.Fatal(err)
	}
	g := make([]float64, len(got))
	for i, v := range got {
		g[i] = float64(v)
	}
	if i := within(g, ex.logits, ex.logitsTol); i >= 0 {
		t.Errorf("scores[%d] = %v, want %v ± %v", i, g[i], ex.logits[i], ex.logitsTol[i])
	}
}
