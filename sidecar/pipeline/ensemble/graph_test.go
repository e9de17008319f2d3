package ensemble

import (
	"slices"
	"strings"
	"testing"

	"github.com/mergectl/react-triton/triton/tritonpb"
)

// step is an ensemble step of model, version -1.
func step(model string, in, out map[string]string) *tritonpb.ModelEnsembling_Step {
	return &tritonpb.ModelEnsembling_Step{ModelName: model, ModelVersion: -1, InputMap: in, OutputMap: out}
}

// config is an ensemble's configuration.
func config(inputs, outputs []string, steps ...*tritonpb.ModelEnsembling_Step) *tritonpb.ModelConfig {
	c := &tritonpb.ModelConfig{Name: "ens", Platform: "ensemble",
		SchedulingChoice: &tritonpb.ModelConfig_EnsembleScheduling{EnsembleScheduling: &tritonpb.ModelEnsembling{Step: steps}}}
	for _, n := range inputs {
		c.Input = append(c.Input, &tritonpb.ModelInput{Name: n})
	}
	for _, n := range outputs {
		c.Output = append(c.Output, &tritonpb.ModelOutput{Name: n})
	}
	return c
}

// pipeline is pre → backbone → two heads, the second followed by post.
func pipeline() *tritonpb.ModelConfig {
	return config([]string{"image", "mask"}, []string{"a", "b_label"},
		step("pre", map[string]string{"image": "image"}, map[string]string{"x": "pixels"}),
		step("backbone", map[string]string{"x": "pixels", "mask": "mask"}, map[string]string{"feature": "emb"}),
		step("head_a", map[string]string{"in": "emb"}, map[string]string{"out": "a"}),
		step("head_b", map[string]string{"in": "emb"}, map[string]string{"out": "b"}),
		step("post", map[string]string{"scores": "b"}, map[string]string{"label": "b_label"}))
}

func TestNew(t *testing.T) {
	g, problems := New(pipeline(), "emb")
	if problems != nil {
		t.Fatalf("problems %v", problems)
	}
	if g.Ensemble() != "ens" || g.Correct() != "emb" || !slices.Equal(g.Outputs(), []string{"a", "b_label"}) {
		t.Errorf("graph %q correct %q outputs %v", g.Ensemble(), g.Correct(), g.Outputs())
	}
	s := g.Steps()[1]
	if s.Model != "backbone" || s.Version != "" || len(s.In) != 2 || s.In[0] != (Binding{"mask", "mask"}) || s.In[1] != (Binding{"x", "pixels"}) {
		t.Errorf("steps[1] = %+v", s)
	}
	if i, ok := g.Producer("emb"); !ok || i != 1 {
		t.Errorf("Producer(emb) = %d, %v", i, ok)
	}
	if r := g.Readers("emb"); !slices.Equal(r, []int{2, 3}) {
		t.Errorf("Readers(emb) = %v", r)
	}
	for _, tt := range []struct {
		wanted []string
		need   []bool
	}{
		{[]string{"a"}, []bool{true, true, true, false, false}},
		{[]string{"b_label"}, []bool{true, true, false, true, true}},
		{[]string{"a", "b_label"}, []bool{true, true, true, true, true}},
		{[]string{"pixels"}, []bool{true, false, false, false, false}},
	} {
		if got := g.Needed(tt.wanted); !slices.Equal(got, tt.need) {
			t.Errorf("Needed(%v) = %v, want %v", tt.wanted, got, tt.need)
		}
	}
}

// TestNewProblems: every problem of a graph and of its tensor to correct
// is reported at once, under the key it concerns.
func TestNewProblems(t *testing.T) {
	tests := []struct {
		name    string
		cfg     *tritonpb.ModelConfig
		correct string
		want    []Problem
	}{
		{"no steps", config([]string{"x"}, []string{"y"}), "emb",
			[]Problem{{"name", `ensemble "ens" has no steps`}}},
		{"unknown tensor", pipeline(), "feature",
			[]Problem{{"correct", `ensemble "ens" has no tensor "feature" (tensors steps produce: a, b, b_label, emb, pixels)`}}},
		{"an input", pipeline(), "mask",
			[]Problem{{"correct", `tensor "mask" is an input of ensemble "ens", which no step produces`}}},
		{"read by no step", pipeline(), "a",
			[]Problem{{"correct", `tensor "a" of ensemble "ens" is read by no step (it is produced by steps[2] (model "head_a"))`}}},
		{"everything wrong", config([]string{"x"}, []string{"y", "z"},
			step("", map[string]string{"in": "x"}, map[string]string{"out": "t"}),
			step("m", map[string]string{"in": "x"}, map[string]string{"out": "t"}),
			step("m2", map[string]string{"in": "ghost"}, map[string]string{"out": "x"}),
			step("c1", map[string]string{"in": "u"}, map[string]string{"out": "v"}),
			step("c2", map[string]string{"in": "v"}, map[string]string{"out": "u"})), "t",
			[]Problem{
				{"name", `ensemble "ens" steps[0] names no model`},
				{"name", `tensor "x" is an input of the ensemble and also produced by steps[2] (model "m2")`},
				{"name", `steps[2] (model "m2"): input "in" reads tensor "ghost", which is neither an input of the ensemble nor produced by a step`},
				{"name", `output "y" is produced by no step`},
				{"name", `output "z" is produced by no step`},
				{"name", `steps steps[3] (model "c1"), steps[4] (model "c2") wait for each other's outputs`},
				{"correct", `tensor "t" of ensemble "ens" is produced by 2 steps (steps[0] (model ""), steps[1] (model "m"))`},
				{"correct", `tensor "t" of ensemble "ens" is read by no step`},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, got := New(tt.cfg, tt.correct)
			if g != nil {
				t.Error("a graph with problems")
			}
			left := slices.Clone(got)
			for _, w := range tt.want {
				i := slices.IndexFunc(left, func(p Problem) bool { return p.Key == w.Key && strings.Contains(p.Msg, w.Msg) })
				if i < 0 {
					t.Errorf("no %s problem containing %q", w.Key, w.Msg)
					continue
				}
				left = slices.Delete(left, i, i+1)
			}
			for _, p := range left {
				t.Errorf("unexpected problem %s: %s", p.Key, p.Msg)
			}
		})
	}
}
