package pipeline_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/internal/testutil"
	"github.com/mergectl/react-triton/problem"
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/componentsfile"
	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/internal/faketriton"
	"github.com/mergectl/react-triton/sidecar/pipeline"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// oddModels are models that do not fit a controllable model, each in one
// way, beside the standard ones.
func oddModels(sc *faketriton.Scenario) []*faketriton.Model {
	d5 := [][]float64{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {1, 1, 0}, {0, 1, 1}}
	feature4 := faketriton.Tensor{Name: "feature", Datatype: "FP32", Shape: []int64{-1, 4}}
	logits := faketriton.Tensor{Name: "logits", Datatype: "FP32", Shape: []int64{-1, 2}}
	return append(scenarioModels(sc, "FP32", "FP32"),
		sc.BackboneModel("backbone_copy", "FP32"),
		faketriton.Linear("bb_embed", "x", "FP32", "embedding", "FP32", sc.M, sc.Bias),
		faketriton.Linear("bb_d5", "x", "FP32", "feature", "FP32", d5, nil),
		&faketriton.Model{Name: "bb_int", MaxBatchSize: 8,
			Inputs:  []faketriton.Tensor{{Name: "x", Datatype: "FP32", Shape: []int64{-1, 3}}},
			Outputs: []faketriton.Tensor{{Name: "feature", Datatype: "INT32", Shape: []int64{-1, 4}}}},
		&faketriton.Model{Name: "head_two", MaxBatchSize: 8,
			Inputs:  []faketriton.Tensor{feature4, {Name: "mask", Datatype: "FP32", Shape: []int64{-1, 1}}},
			Outputs: []faketriton.Tensor{logits}},
		&faketriton.Model{Name: "head_two_opt", MaxBatchSize: 8,
			Inputs:  []faketriton.Tensor{feature4, {Name: "mask", Datatype: "FP32", Shape: []int64{-1, 1}, Optional: true}},
			Outputs: []faketriton.Tensor{logits}},
		&faketriton.Model{Name: "head_int", MaxBatchSize: 8,
			Inputs:  []faketriton.Tensor{{Name: "feature", Datatype: "INT32", Shape: []int64{-1, 4}}},
			Outputs: []faketriton.Tensor{logits}},
		&faketriton.Model{Name: "head_d5", MaxBatchSize: 8,
			Inputs:  []faketriton.Tensor{{Name: "feature", Datatype: "FP32", Shape: []int64{-1, 5}}},
			Outputs: []faketriton.Tensor{logits}},
		&faketriton.Model{Name: "head_nobatch", MaxBatchSize: 0,
			Inputs:  []faketriton.Tensor{feature4},
			Outputs: []faketriton.Tensor{logits}},
		&faketriton.Model{Name: "head_small", MaxBatchSize: 4,
			Inputs:  []faketriton.Tensor{feature4},
			Outputs: []faketriton.Tensor{logits, {Name: "probs", Datatype: "FP32", Shape: []int64{-1, 2}}}},
	)
}

// wantProblem is a problem Build must report: at path, with a message
// containing msg.
type wantProblem struct {
	path, msg string
	transient bool
}

// checkProblems checks that err is a problem.List with exactly the problems
// wanted, in any order.
func checkProblems(t *testing.T, err error, want []wantProblem) {
	t.Helper()
	var be problem.List
	if !errors.As(err, &be) {
		t.Fatalf("Build error %v (%T), want a problem.List with %d problems", err, err, len(want))
	}
	left := slices.Clone(be)
	for _, w := range want {
		i := slices.IndexFunc(left, func(p *problem.Problem) bool { return p.Path == w.path && strings.Contains(p.Msg, w.msg) })
		if i < 0 {
			t.Errorf("no problem at %s containing %q", w.path, w.msg)
			continue
		}
		if left[i].Transient != w.transient {
			t.Errorf("%s: transient = %v, want %v", w.path, left[i].Transient, w.transient)
		}
		if !strings.Contains(be.Error(), left[i].Path+": "+left[i].Msg) {
			t.Errorf("Error() does not list %q:\n%s", left[i].Path+": "+left[i].Msg, be.Error())
		}
		left = slices.Delete(left, i, i+1)
	}
	for _, p := range left {
		t.Errorf("unexpected problem %s: %s", p.Path, p.Msg)
	}
	transient := len(want) > 0
	for _, w := range want {
		transient = transient && w.transient
	}
	if be.Transient() != transient {
		t.Errorf("Transient() = %v, want %v", be.Transient(), transient)
	}
}

// truncated writes the first half of file into dir and returns its path.
func truncated(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "truncated.safetensors")
	if err := os.WriteFile(path, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// corrupted writes file with one byte of its data flipped and returns its
// path.
func corrupted(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-9] ^= 0x40
	path := filepath.Join(t.TempDir(), "corrupt.safetensors")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestBuildProblems(t *testing.T) {
	sc := faketriton.NewScenario(7, 4, tasks...)
	e := newEnv(t, oddModels(sc)...)
	// single keeps the first model, edited; its backbone may be another
	// than the one the components were calibrated on (TestBuildCalibration
	// checks that).
	single := func(f func(m *config.Model)) func(*config.Config) {
		return func(c *config.Config) {
			c.Models = c.Models[:1]
			c.Models[0].VariantOf = "backbone"
			f(&c.Models[0])
		}
	}
	tests := []struct {
		name string
		edit func(*config.Config)
		want []wantProblem
	}{
		{"valid", func(*config.Config) {}, nil},
		{"unknown task", single(func(m *config.Model) { m.Heads[0].Task = "d" }),
			[]wantProblem{{path: "models[0].heads[0].task", msg: `unknown task "d"`}}},
		{"unknown task in a later model", func(c *config.Config) { c.Models[1].Heads[2].Task = "z" },
			[]wantProblem{{path: "models[1].heads[2].task", msg: `unknown task "z"`}}},
		{"missing output", single(func(m *config.Model) { m.Backbone.Output = "nope" }),
			[]wantProblem{{path: "models[0].backbone.output", msg: `has no output "nope" (outputs: feature)`}}},
		{"feature named otherwise", single(func(m *config.Model) { m.Backbone.Model = "bb_embed" }),
			[]wantProblem{{path: "models[0].backbone.output", msg: `has no output "feature" (outputs: embedding)`}}},
		{"wrong D", single(func(m *config.Model) { m.Backbone.Model = "bb_d5" }),
			[]wantProblem{{path: "models[0].backbone.output", msg: "D=4"},
				{path: "models[0].heads[0].model", msg: "does not take the backbone's"}}},
		{"non-float feature", single(func(m *config.Model) { m.Backbone.Model = "bb_int" }),
			[]wantProblem{{path: "models[0].backbone.output", msg: "INT32"}}},
		{"head needs another input", single(func(m *config.Model) { m.Heads[0].Model, m.Heads[0].Input = "head_two", "feature" }),
			[]wantProblem{{path: "models[0].heads[0].model", msg: `needs input "mask"`}}},
		{"head with two inputs, none named", single(func(m *config.Model) { m.Heads[0].Model = "head_two" }),
			[]wantProblem{{path: "models[0].heads[0].input", msg: "has 2 inputs"}}},
		{"head with an optional second input", single(func(m *config.Model) { m.Heads[0].Model, m.Heads[0].Input = "head_two_opt", "feature" }), nil},
		{"head input not found", single(func(m *config.Model) { m.Heads[0].Input = "nope" }),
			[]wantProblem{{path: "models[0].heads[0].input", msg: `has no input "nope" (inputs: feature)`}}},
		{"head input not float", single(func(m *config.Model) { m.Heads[0].Model = "head_int" }),
			[]wantProblem{{path: "models[0].heads[0].model", msg: "INT32"}}},
		{"head input of another width", single(func(m *config.Model) { m.Heads[0].Model = "head_d5" }),
			[]wantProblem{{path: "models[0].heads[0].model", msg: "shape [-1 5]"}}},
		{"batching mismatch", single(func(m *config.Model) { m.Heads[0].Model = "head_nobatch" }),
			[]wantProblem{{path: "models[0].heads[0].model", msg: "max_batch_size 0"}}},
		{"duplicate exposed outputs", func(c *config.Config) {
			for i := range c.Models[1].Heads {
				c.Models[1].Heads[i].Outputs = nil
			}
		}, []wantProblem{
			{path: "models[1].heads[1].outputs", msg: `output "logits" is also returned by another head of "multi"`},
			{path: "models[1].heads[2].outputs", msg: `output "logits" is also returned by another head of "multi"`}}},
		{"renamed onto another head's output", func(c *config.Config) { c.Models[1].Heads[2].Outputs = map[string]string{"logits": "logits_a"} },
			[]wantProblem{{path: "models[1].heads[2].outputs", msg: `"logits_a"`}}},
		{"unknown head output", single(func(m *config.Model) { m.Heads[0].Outputs = map[string]string{"probs": "p"} }),
			[]wantProblem{{path: "models[0].heads[0].outputs.probs", msg: `has no output "probs"`}}},
		{"corrupt components", func(c *config.Config) { c.Components[0].Path = corrupted(t, e.comps) },
			[]wantProblem{{path: "components[0].path", msg: "corrupt.safetensors"}}},
		{"truncated components", func(c *config.Config) { c.Components[0].Path = truncated(t, e.comps) },
			[]wantProblem{{path: "components[0].path", msg: "truncated.safetensors"}}},
		{"missing components", func(c *config.Config) { c.Components[0].Path = filepath.Join(t.TempDir(), "none.safetensors") },
			[]wantProblem{{path: "components[0].path", msg: "none.safetensors"}}},
		{"bad preset", func(c *config.Config) { c.Components[0].Presets["x"] = "a=1,z=1" },
			[]wantProblem{{path: "components[0].presets.x", msg: `unknown task "z"`}}},
		{"bad default", func(c *config.Config) { c.Components[0].DefaultPreference = "a=-1" },
			[]wantProblem{{path: "components[0].default_preference", msg: "negative"}}},
		{"backbone not ready", single(func(m *config.Model) { m.Backbone.Model = "backbone_copy" }),
			[]wantProblem{{path: "models[0].backbone.model", msg: `model "backbone_copy" is not ready on Triton ` + e.fake.Addr, transient: true}}},
		{"backbone version not loaded", single(func(m *config.Model) { m.Backbone.Version = "2" }),
			[]wantProblem{{path: "models[0].backbone.model", msg: `model "backbone" version 2`, transient: true}}},
		// A name Triton's repository does not have (a typo) is permanent:
		// waiting would not bring it, and a reload would retry for ever.
		{"head not in the repository", single(func(m *config.Model) { m.Heads[0].Model = "head_zz" }),
			[]wantProblem{{path: "models[0].heads[0].model", msg: `model "head_zz" is not in the model repository`}}},
		{"transient and permanent", func(c *config.Config) {
			c.Models[0].Heads[0].Model = "backbone_copy"
			c.Models[1].Heads[0].Model = "head_int"
		}, []wantProblem{
			{path: "models[0].heads[0].model", msg: `model "backbone_copy" is not ready`, transient: true},
			{path: "models[1].heads[0].model", msg: "INT32"}}},
		{"every problem at once", func(c *config.Config) {
			c.Components = append(c.Components,
				config.Components{Name: "bad", Path: e.comps, DefaultPreference: "q=1", Presets: map[string]string{"x": "a=1,z=2", "ok": "a=1"}},
				config.Components{Name: "trunc", Path: truncated(t, e.comps)})
			c.Models[0].Backbone.Output = "nope"
			c.Models[0].Heads = append(c.Models[0].Heads,
				config.Head{Task: "d", Model: "head_b", Outputs: map[string]string{"logits": "logits_d"}},
				config.Head{Task: "c", Model: "head_two", Input: "feature", Outputs: map[string]string{"logits": "logits_c"}})
			for i := range c.Models[1].Heads {
				c.Models[1].Heads[i].Outputs = nil
			}
			c.Models[1].Heads[2].Model = "head_nobatch"
			c.Models = append(c.Models,
				config.Model{Name: "uses_bad", Components: "bad", Backbone: config.Backbone{Model: "bb_int", Output: "feature"},
					Heads: []config.Head{{Task: "a", Model: "head_a"}}},
				config.Model{Name: "int", Components: "zoo", Backbone: config.Backbone{Model: "bb_int", Output: "feature"},
					Heads: []config.Head{{Task: "a", Model: "head_a"}}})
		}, []wantProblem{
			{path: "components[1].default_preference", msg: `unknown task "q"`},
			{path: "components[1].presets.x", msg: `unknown task "z"`},
			{path: "components[2].path", msg: "truncated"},
			{path: "models[0].backbone.output", msg: `no output "nope"`},
			{path: "models[0].heads[1].task", msg: `unknown task "d"`},
			{path: "models[0].heads[2].model", msg: `needs input "mask"`},
			{path: "models[1].heads[1].outputs", msg: `"logits"`},
			{path: "models[1].heads[2].model", msg: "max_batch_size"},
			{path: "models[1].heads[2].outputs", msg: `"logits"`},
			{path: "models[3].backbone.output", msg: "INT32"},
			{path: "models[0].backbone.model", msg: `model "backbone" output "nope" would be corrected with the components of "zoo", calibrated on model "backbone" output "feature"`},
			{path: "models[3].backbone.model", msg: `model "bb_int" output "feature" would be corrected with the components of "zoo", calibrated on model "backbone"`},
		}},
	}
	e.fake.SetReady("backbone_copy", false)

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := e.config()
			tt.edit(cfg)
			if set := e.checkBuild(t, cfg, tt.want); tt.want != nil && set != nil {
				t.Errorf("Build returned a set with its error")
			}
		})
	}
}

// checkBuild builds cfg and checks the outcome: with want nil, every
// model built; otherwise an error with the problems of want
// (checkProblems). It returns the set Build returned.
func (e *env) checkBuild(t *testing.T, cfg *config.Config, want []wantProblem) *pipeline.Set {
	t.Helper()
	set, err := e.build(cfg)
	if want == nil {
		if err != nil {
			t.Fatalf("Build: %v", err)
		}
		if len(set.Models) != len(cfg.Models) {
			t.Errorf("built %d models of %d", len(set.Models), len(cfg.Models))
		}
		return set
	}
	checkProblems(t, err, want)
	return set
}

// TestBuildUnreachable: an unreachable Triton is a transient problem that
// names its address.
func TestBuildUnreachable(t *testing.T) {
	e := newEnv(t)
	e.up = upstream(t, testutil.ClosedAddr(t))
	_, err := e.build(e.config())
	checkProblems(t, err, []wantProblem{
		{path: "models[0].backbone.model", msg: e.up.Addr, transient: true},
		{path: "models[1].backbone.model", msg: e.up.Addr, transient: true},
	})
}

// TestBuildReportsHeadProblemsBesideBackbone: a backbone that is not ready
// yet must not hide what is wrong with the heads, which no wait will cure:
// the error must list both and not be transient (else Start retries for
// triton.startup_timeout a configuration that can never load).
func TestBuildReportsHeadProblemsBesideBackbone(t *testing.T) {
	e := newEnv(t)
	e.fake.SetReady("backbone", false)
	cfg := e.config()
	cfg.Models = cfg.Models[:1]
	cfg.Models[0].Heads[0].Task = "d"
	_, err := e.build(cfg)
	checkProblems(t, err, []wantProblem{
		{path: "models[0].backbone.model", msg: "not ready", transient: true},
		{path: "models[0].heads[0].task", msg: `unknown task "d"`},
	})
}

// TestBuildSet checks what a successful Build describes: the files'
// checksums, the models' metadata and configuration as clients will read
// them.
func TestBuildSet(t *testing.T) {
	sc := faketriton.NewScenario(7, 4, tasks...)
	e := newEnv(t, oddModels(sc)...)
	cfg := e.config()
	cfg.Models[1].Heads[1].Model = "head_small" // max_batch_size 4, and a second output
	cfg.Models[1].Heads[1].Outputs = map[string]string{"logits": "logits_b", "probs": "probs_b"}
	// A backbone other than the one the components were calibrated on,
	// declared a variant of it.
	cfg.Models[0].Backbone.Model, cfg.Models[0].VariantOf = "backbone_copy", "backbone"
	set := e.mustBuild(t, cfg)

	b, _ := os.ReadFile(e.comps)
	sum := sha256.Sum256(b)
	if got := set.Files; len(got) != 1 || got[e.comps] != hex.EncodeToString(sum[:]) {
		t.Errorf("Files = %v, want %s: %x", got, e.comps, sum)
	}

	m := set.Models["multi"]
	if m.Name() != "multi" || !slices.Equal(m.Tasks(), tasks) {
		t.Errorf("Name %q, Tasks %v", m.Name(), m.Tasks())
	}
	models, versions := m.Dependencies()
	if !slices.Equal(models, []string{"backbone", "head_a", "head_small", "head_c"}) || len(versions) != 4 {
		t.Errorf("Dependencies = %v, %v", models, versions)
	}
	wantMeta := &tritonpb.ModelMetadataResponse{
		Name: "multi", Versions: []string{"1"}, Platform: "react",
		Inputs: []*tritonpb.ModelMetadataResponse_TensorMetadata{{Name: "x", Datatype: "FP32", Shape: []int64{-1, 3}}},
		Outputs: []*tritonpb.ModelMetadataResponse_TensorMetadata{
			{Name: "logits_a", Datatype: "FP32", Shape: []int64{-1, 2}},
			{Name: "logits_b", Datatype: "FP32", Shape: []int64{-1, 2}},
			{Name: "probs_b", Datatype: "FP32", Shape: []int64{-1, 2}},
			{Name: "logits_c", Datatype: "FP32", Shape: []int64{-1, 2}},
		},
	}
	if !proto.Equal(m.Metadata(), wantMeta) {
		t.Errorf("Metadata =\n%v\nwant\n%v", m.Metadata(), wantMeta)
	}
	c := m.Config()
	if c.GetName() != "multi" || c.GetPlatform() != "react" || c.GetBackend() != "react" || c.GetMaxBatchSize() != 4 {
		t.Errorf("Config name %q platform %q backend %q max_batch_size %d; want multi, react, react, 4 (head_small's)",
			c.GetName(), c.GetPlatform(), c.GetBackend(), c.GetMaxBatchSize())
	}
	if len(c.GetInput()) != 1 || c.GetInput()[0].GetName() != "x" || c.GetInput()[0].GetDataType() != tritonpb.DataType_TYPE_FP32 ||
		!slices.Equal(c.GetInput()[0].GetDims(), []int64{3}) {
		t.Errorf("Config inputs %v", c.GetInput())
	}
	var outs []string
	for _, o := range c.GetOutput() {
		outs = append(outs, o.GetName())
		if o.GetDataType() != tritonpb.DataType_TYPE_FP32 || !slices.Equal(o.GetDims(), []int64{2}) {
			t.Errorf("Config output %v", o)
		}
	}
	if !slices.Equal(outs, []string{"logits_a", "logits_b", "probs_b", "logits_c"}) {
		t.Errorf("Config outputs %v", outs)
	}
	params := map[string]string{}
	for k, v := range c.GetParameters() {
		params[k] = v.GetStringValue()
	}
	wantParams := map[string]string{
		"react.backbone":           "backbone:feature",
		"react.heads":              "a=head_a,b=head_small,c=head_c",
		"react.components":         filepath.Base(e.comps), // the name, not the host path
		"react.default_preference": "a=1",
		"react.presets":            "b_first,even",
		"react.tasks":              "a,b,c",
	}
	for k, v := range wantParams {
		if params[k] != v {
			t.Errorf("Config parameter %s = %q, want %q", k, params[k], v)
		}
	}
	// The client may ask for batches up to the smallest max_batch_size.
	if _, err := m.Infer(context.Background(), e.up, pipeline.Request{Proto: inferRequest("multi", make([]float64, 5*3))}); status.Code(err) != codes.InvalidArgument ||
		!strings.Contains(err.Error(), "maximum of 4") {
		t.Errorf("a batch of 5 for a model whose head takes at most 4: %v", err)
	}
	// A batch of 4 passes the checks and reaches head_small, which cannot
	// infer in this test.
	before := e.fake.Calls("head_small")
	if _, err := m.Infer(context.Background(), e.up, pipeline.Request{Proto: inferRequest("multi", make([]float64, 4*3))}); status.Code(err) != codes.Unimplemented ||
		e.fake.Calls("head_small") != before+1 {
		t.Errorf("batch of 4: %v", err)
	}
}

// TestBuildLimits: limits.max_batch_size lowers the model's limit, and
// limits.max_preference_length bounds the presets' names requests send.
func TestBuildLimits(t *testing.T) {
	e := newEnv(t)
	cfg := e.config()
	cfg.Limits.MaxBatchSize = 3
	m := e.mustBuild(t, cfg).Models["single"]
	if got := m.Config().GetMaxBatchSize(); got != 3 {
		t.Errorf("max_batch_size %d, want the limit 3", got)
	}
	if _, err := m.Infer(context.Background(), e.up, pipeline.Request{Proto: inferRequest("single", batch[:12])}); err == nil {
		t.Error("a batch of 4 passed limits.max_batch_size 3")
	}
	if _, err := m.Infer(context.Background(), e.up, pipeline.Request{Proto: inferRequest("single", batch[:9])}); err != nil {
		t.Errorf("batch of 3: %v", err)
	}
	_, err := m.Infer(context.Background(), e.up, pipeline.Request{Proto: inferRequest("single", batch[:3]),
		Header: control.Values{Preset: strings.Repeat("p", 65), HasPreset: true}})
	if err == nil || !strings.Contains(err.Error(), "limit of 64") {
		t.Errorf("preset name of 65 bytes: %v", err)
	}
}

// TestBuildNeedsCacheAndStats: Build refuses to run without its shared
// state.
func TestBuildNeedsCacheAndStats(t *testing.T) {
	e := newEnv(t)
	if _, err := pipeline.Build(context.Background(), e.config(), e.up, pipeline.Options{Stats: e.stats}); err == nil {
		t.Error("Build without a cache succeeded")
	}
	if _, err := pipeline.Build(context.Background(), e.config(), e.up, pipeline.Options{Cache: e.cache}); err == nil {
		t.Error("Build without a stats registry succeeded")
	}
}

// TestBuildCalibration: the backbone corrected must be the one the
// components file records, or a variant the configuration names; a file
// that records none is not checked.
func TestBuildCalibration(t *testing.T) {
	sc := faketriton.NewScenario(7, 4, tasks...)
	e := newEnv(t, oddModels(sc)...)
	c, err := sc.Components()
	if err != nil {
		t.Fatal(err)
	}
	recorded := c.Backbone
	c.Backbone = react.ModelRef{}
	unrecorded := filepath.Join(t.TempDir(), "unrecorded.safetensors")
	if err := componentsfile.Save(unrecorded, c); err != nil {
		t.Fatal(err)
	}
	// A file that records the backbone but not its output (older files,
	// or fitted with --backbone-model alone): any output of that model.
	c.Backbone = react.ModelRef{Name: recorded.Name, Version: recorded.Version}
	noOutput := filepath.Join(t.TempDir(), "no-output.safetensors")
	if err := componentsfile.Save(noOutput, c); err != nil {
		t.Fatal(err)
	}
	// A file calibrated on version 2 of the backbone, which serves only
	// version 1; and one that records version 1.
	c.Backbone = react.ModelRef{Name: recorded.Name, Version: "2", Output: recorded.Output}
	version2 := filepath.Join(t.TempDir(), "version2.safetensors")
	if err := componentsfile.Save(version2, c); err != nil {
		t.Fatal(err)
	}
	c.Backbone.Version = "1"
	version1 := filepath.Join(t.TempDir(), "version1.safetensors")
	if err := componentsfile.Save(version1, c); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name                   string
		backbone, calibratedOn string
		components             string
		want                   []wantProblem
	}{
		{"the recorded backbone", "backbone", "", e.comps, nil},
		{"the recorded version", "backbone", "", version1, nil},
		{"another version", "backbone", "", version2, []wantProblem{{path: "models[0].backbone.model",
			msg: `model "backbone" output "feature": version 1 answers, but the components of "zoo" were calibrated on version 2: ` +
				`pin version 2 (the ensemble step's model_version, or the backbone's version), or calibrate components on version 1`}}},
		{"another version, a declared variant", "backbone", "backbone", version2, nil},
		{"another backbone", "backbone_copy", "", e.comps, []wantProblem{{path: "models[0].backbone.model",
			msg: `model "backbone_copy" output "feature" would be corrected with the components of "zoo", calibrated on model "backbone" output "feature": ` +
				`calibrate components on this model, or, if it is a variant of "backbone" (an FP16 copy, a re-export), say so with variant_of: backbone`}}},
		{"a declared variant", "backbone_copy", "backbone", e.comps, nil},
		{"a variant of another backbone", "backbone_copy", "backbone_fp16", e.comps, []wantProblem{{path: "models[0].variant_of",
			msg: `the components of "zoo" were calibrated on model "backbone", not "backbone_fp16": name the model the file records`}}},
		{"a file that records no backbone", "backbone_copy", "", unrecorded, nil},
		{"a file that records the backbone, no output", "backbone", "", noOutput, nil},
		{"a file that records another backbone, no output", "backbone_copy", "", noOutput, []wantProblem{{path: "models[0].backbone.model",
			msg: `model "backbone_copy" output "feature" would be corrected with the components of "zoo", calibrated on model "backbone" output "": `}}},
	}
	e.fake.SetReady("backbone_copy", true)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := e.config()
			cfg.Components[0].Path = tt.components
			cfg.Models = cfg.Models[:1]
			cfg.Models[0].Backbone.Model, cfg.Models[0].VariantOf = tt.backbone, tt.calibratedOn
			_, err := e.build(cfg)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Build: %v", err)
				}
				return
			}
			checkProblems(t, err, tt.want)
		})
	}
	// A backbone with versions 1 and 2, the file calibrated on 1: pinned
	// to 1 it builds; left to Triton's choice (2) it does not.
	v12 := sc.BackboneModel("backbone_v12", "FP32")
	v12.Versions = []string{"1", "2"}
	e.fake.Put(v12)
	c.Backbone = react.ModelRef{Name: "backbone_v12", Version: "1", Output: recorded.Output}
	onV1 := filepath.Join(t.TempDir(), "v12.safetensors")
	if err := componentsfile.Save(onV1, c); err != nil {
		t.Fatal(err)
	}
	for _, pin := range []string{"1", ""} {
		cfg := e.config()
		cfg.Components[0].Path = onV1
		cfg.Models = cfg.Models[:1]
		cfg.Models[0].Backbone.Model, cfg.Models[0].Backbone.Version = "backbone_v12", pin
		_, err := e.build(cfg)
		if pin == "1" && err != nil {
			t.Errorf("version 1 pinned: %v", err)
		}
		if pin == "" {
			checkProblems(t, err, []wantProblem{{path: "models[0].backbone.model",
				msg: `model "backbone_v12" output "feature": version 2 answers, but the components of "zoo" were calibrated on version 1`}})
		}
	}
}
