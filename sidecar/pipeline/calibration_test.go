package pipeline_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/react/componentsfile"
	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/pipeline"
)

// TestInferRefusesAnotherVersionOfTheCalibratedBackbone: components
// calibrated on version 1 of the backbone; when Triton loads version 2
// after start-up and answers from it (a backbone left to Triton's choice,
// or an ensemble step with model_version -1), a corrected request is
// refused (INTERNAL, saying what to do) rather than corrected with version
// 1's statistics; pinned to version 1, it is served, and so is a request
// without a correction (docs/contracts.md: "in a corrected request").
// Both forms.
func TestInferRefusesAnotherVersionOfTheCalibratedBackbone(t *testing.T) {
	tests := []struct {
		name    string
		env     func(*testing.T) *env
		request func() pipeline.Request
		model   string
		pin     func(cfg *config.Config)
		what    string
	}{
		{"explicit", func(t *testing.T) *env { return newEnv(t) },
			func() pipeline.Request { return pipeline.Request{Proto: inferRequest("single", make([]float64, 2*3))} },
			"single", func(cfg *config.Config) { cfg.Models[0].Backbone.Version = "1" }, `backbone model "backbone"`},
		{"graph", newGraphEnv,
			func() pipeline.Request {
				return pipeline.Request{Proto: graphRequest("cls", true, graphImages, graphMasks)}
			},
			"cls", nil, `ensemble step 1 model "backbone"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := tt.env(t)
			c, err := e.sc.Components()
			if err != nil {
				t.Fatal(err)
			}
			c.Backbone.Version = "1"
			path := filepath.Join(t.TempDir(), "v1.safetensors")
			if err := componentsfile.Save(path, c); err != nil {
				t.Fatal(err)
			}
			cfg := e.config()
			if tt.name == "graph" {
				cfg = e.graphConfig()
			}
			cfg.Components[0].Path = path
			cfg.Models = cfg.Models[:1]
			set := e.mustBuild(t, cfg)
			if _, err := set.Models[tt.model].Infer(context.Background(), e.up, tt.request()); err != nil {
				t.Fatalf("version 1: %v", err)
			}
			e.fake.SetVersions("backbone", "1", "2")
			_, err = set.Models[tt.model].Infer(context.Background(), e.up, tt.request())
			want := tt.what + ` answered from version 2, but the components of "zoo" were calibrated on version 1: pin version 1`
			if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), want) {
				t.Errorf("version 2 answered: %v, want INTERNAL …%s…", err, want)
			}
			// Without a correction, nothing calibrated is applied: served.
			if _, err := set.Models[tt.model].Infer(context.Background(), e.up, withPreference(tt.request().Proto, "none")); err != nil {
				t.Errorf("version 2 answered, no correction: %v", err)
			}
			if tt.pin == nil {
				return
			}
			tt.pin(cfg)
			set = e.mustBuild(t, cfg)
			if _, err := set.Models[tt.model].Infer(context.Background(), e.up, tt.request()); err != nil {
				t.Errorf("pinned to version 1: %v", err)
			}
		})
	}
}

// saveCalibratedOn saves e's components with the recorded backbone's
// version set to version, and returns the file's path.
func saveCalibratedOn(t *testing.T, e *env, version string) string {
	t.Helper()
	c, err := e.sc.Components()
	if err != nil {
		t.Fatal(err)
	}
	c.Backbone.Version = version
	path := filepath.Join(t.TempDir(), "v"+version+".safetensors")
	if err := componentsfile.Save(path, c); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestBuildGraphCalibratedVersion: components calibrated on version 1 of
// the backbone, which Triton serves as 1 and 2: the graph-form model whose
// step leaves the version to Triton (2 answers) and the explicit model
// left to Triton's choice are both refused at start-up, at once, each at
// its own key; the declared variant (cls_nb, another backbone) is not.
func TestBuildGraphCalibratedVersion(t *testing.T) {
	e := newGraphEnv(t)
	cfg := e.graphConfig()
	cfg.Components[0].Path = saveCalibratedOn(t, e, "1")
	cfg.Models = append(cfg.Models, config.Model{Name: "single", Components: "zoo",
		Backbone: config.Backbone{Model: "backbone", Output: "feature"},
		Heads:    []config.Head{{Task: "a", Model: "head_a"}}})
	e.mustBuild(t, cfg) // version 1 only: both build
	e.fake.SetVersions("backbone", "1", "2")
	_, err := e.build(cfg)
	msg := `model "backbone" output "feature": version 2 answers, but the components of "zoo" were calibrated on version 1: ` +
		`pin version 1 (the ensemble step's model_version, or the backbone's version), or calibrate components on version 2`
	checkProblems(t, err, []wantProblem{{path: "models[0].correct", msg: msg}, {path: "models[2].backbone.model", msg: msg}})
}

// TestInferChecksOnlyTheCalibratedVersion: only the step that produces
// the corrected tensor is held to the calibrated version; the other steps
// (preprocessing, heads) answering from a version Triton loaded later are
// served, and so is a declared variant's backbone (cls_nb), whose
// versions are its own.
func TestInferChecksOnlyTheCalibratedVersion(t *testing.T) {
	e := newGraphEnv(t)
	cfg := e.graphConfig()
	cfg.Components[0].Path = saveCalibratedOn(t, e, "1")
	set := e.mustBuild(t, cfg)
	for _, n := range []graphNames{batched, unbatched} {
		for _, step := range []string{n.pre, n.headA, n.headB, n.top1, n.softmax} {
			e.fake.SetVersions(step, "1", "2")
		}
	}
	e.fake.SetVersions(unbatched.backbone, "1", "2")
	for _, n := range []graphNames{batched, unbatched} {
		calls := e.fake.Calls(n.headA)
		image, mask := graphImages, graphMasks
		if !n.batch {
			image, mask = image[:3], mask[:3]
		}
		req := withPreference(graphRequest(n.ensemble, n.batch, image, mask), "a=1,b=3")
		if _, err := set.Models[n.ensemble].Infer(context.Background(), e.up, req); err != nil {
			t.Errorf("%s, steps at version 2: %v", n.ensemble, err)
		}
		if e.fake.Calls(n.headA) != calls+1 || e.fake.LastResponse(n.headA).GetModelVersion() != "2" {
			t.Errorf("%s: %s did not answer from version 2", n.ensemble, n.headA)
		}
	}
}
