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
// 1's statistics; pinned to version 1, it is served. Both forms.
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
