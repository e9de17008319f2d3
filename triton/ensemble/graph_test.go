package ensemble

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mergectl/react-triton/triton/modelconfig"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

func load(t *testing.T, name string) *Graph {
	t.Helper()
	cfg, _, err := modelconfig.ReadFile(filepath.Join("..", "modelconfig", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestLocateAndOrder(t *testing.T) {
	g := load(t, "repeated_form.pbtxt")
	s, err := g.Locate("emb")
	if err != nil {
		t.Fatal(err)
	}
	if want := (Site{Tensor: "emb", Step: 1, Model: "vit", Output: "embeddings", Consumers: []int{2}}); !reflect.DeepEqual(s, want) {
		t.Errorf("Locate(emb) = %+v, want %+v", s, want)
	}
	levels, err := g.Order()
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]int{{0}, {1}, {2}, {3}}; !reflect.DeepEqual(levels, want) {
		t.Errorf("Order = %v, want %v", levels, want)
	}
	for _, tc := range []struct{ tensor, want string }{
		{"image", `tensor "image" is an input of the ensemble, produced by no step`},
		{"scores", `no step takes tensor "scores"`},
		{"nothing", `no step produces tensor "nothing" (tensors: emb, image, logits, pixels, scores)`},
	} {
		if _, err := g.Locate(tc.tensor); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Locate(%s) = %v, want %q", tc.tensor, err, tc.want)
		}
	}
}

func TestOrderRunsIndependentStepsTogether(t *testing.T) {
	cfg, err := modelconfig.Parse([]byte(`name: "fan" platform: "ensemble"
input [ { name: "x" } ]
ensemble_scheduling { step [
  { model_name: "head_b" input_map { key: "i" value: "z" } output_map { key: "o" value: "b" } },
  { model_name: "backbone" input_map { key: "i" value: "x" } output_map { key: "o" value: "z" } },
  { model_name: "head_a" input_map { key: "i" value: "z" } output_map { key: "o" value: "a" } },
  { model_name: "join" input_map [ { key: "p" value: "a" }, { key: "q" value: "b" } ] output_map { key: "o" value: "y" } }
] }`))
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	levels, err := g.Order()
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]int{{1}, {0, 2}, {3}}; !reflect.DeepEqual(levels, want) {
		t.Errorf("Order = %v, want %v", levels, want)
	}
	cfg.GetEnsembleScheduling().Step[1].InputMap["i"] = "y" // a cycle
	g, _ = New(cfg)
	if _, err := g.Order(); err == nil || !strings.Contains(err.Error(), "a cycle") {
		t.Errorf("Order of a cycle = %v", err)
	}
	if _, err := New(&tritonpb.ModelConfig{Name: "m", Backend: "onnxruntime"}); err == nil {
		t.Error("New of a model that is not an ensemble succeeded")
	}
}
