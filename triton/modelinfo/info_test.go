package modelinfo

import (
	"strings"
	"testing"

	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// zooModel has a batched image input and two outputs: a feature and logits.
func zooModel(version string) *Info {
	return &Info{Name: "backbone", Version: version, Metadata: &tritonpb.ModelMetadataResponse{
		Inputs: []*triton.TensorMetadata{{Name: "image", Datatype: triton.FP32, Shape: []int64{-1, 1, 28, 28}}},
		Outputs: []*triton.TensorMetadata{
			{Name: "feature", Datatype: triton.FP16, Shape: []int64{-1, 64}},
			{Name: "logits", Datatype: triton.FP64, Shape: []int64{-1, 10}},
		},
	}, Config: &tritonpb.ModelConfig{MaxBatchSize: 8}}
}

func TestInfoPicks(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pick     func(m *Info) (*triton.TensorMetadata, error)
		want     string // the tensor picked, or
		wantErrs string // the error
	}{
		{"output by name", func(m *Info) (*triton.TensorMetadata, error) { return m.Output("logits", "") }, "logits", ""},
		{"output by fallback", func(m *Info) (*triton.TensorMetadata, error) { return m.Output("", "feature") }, "feature", ""},
		{"name beats fallback", func(m *Info) (*triton.TensorMetadata, error) { return m.Output("logits", "feature") }, "logits", ""},
		{"no such output", func(m *Info) (*triton.TensorMetadata, error) { return m.Output("emb", "") }, "",
			`model "backbone" version 3 has no output "emb" (outputs: feature, logits)`},
		{"ambiguous output", func(m *Info) (*triton.TensorMetadata, error) { return m.Output("", "emb") }, "",
			`model "backbone" version 3 has 2 outputs (feature, logits): name the one to use`},
		{"only input", func(m *Info) (*triton.TensorMetadata, error) { return m.Input("") }, "image", ""},
		{"no such input", func(m *Info) (*triton.TensorMetadata, error) { return m.Input("x") }, "",
			`model "backbone" version 3 has no input "x" (inputs: image)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.pick(zooModel("3"))
			if tc.wantErrs != "" {
				if err == nil || err.Error() != tc.wantErrs {
					t.Fatalf("error %v, want %q", err, tc.wantErrs)
				}
				return
			}
			if err != nil || got.GetName() != tc.want {
				t.Fatalf("got %v, %v; want %s", got.GetName(), err, tc.want)
			}
		})
	}
}

func TestInfoBatchedInputs(t *testing.T) {
	m := zooModel("")
	ins, err := m.BatchedInputs()
	if err != nil || len(ins) != 1 || triton.FormatShape(ins[0].GetShape()) != "[1 28 28]" {
		t.Fatalf("got %v, %v; want image [1 28 28]", ins, err)
	}
	if triton.FormatShape(m.Metadata.GetInputs()[0].GetShape()) != "[-1 1 28 28]" {
		t.Error("BatchedInputs changed the metadata")
	}
	m.Metadata.Inputs[0].Shape = []int64{1, 28, 28}
	if _, err := m.BatchedInputs(); err == nil || !strings.Contains(err.Error(), `model "backbone" input "image" has shape [1 28 28]: want a batch dimension first`) {
		t.Errorf("unbatched input: %v", err)
	}
	m.Metadata.Inputs = nil
	if _, err := m.BatchedInputs(); err == nil || err.Error() != `model "backbone" has no inputs` {
		t.Errorf("no inputs: %v", err)
	}
	if m.MaxBatchSize() != 8 || (&Info{}).MaxBatchSize() != 0 {
		t.Error("MaxBatchSize: want 8, and 0 without a configuration")
	}
}

// TestFeatureRule: one rule for a feature's datatype, FP32, FP16 or BF16,
// and one wording.
func TestFeatureRule(t *testing.T) {
	for _, tc := range []struct {
		dt string
		ok bool
	}{{triton.FP32, true}, {triton.FP16, true}, {triton.BF16, true}, {triton.FP64, false}, {triton.INT32, false}, {triton.BYTES, false}, {"", false}} {
		if got := IsFeatureDatatype(tc.dt); got != tc.ok {
			t.Errorf("IsFeatureDatatype(%q) = %v", tc.dt, got)
		}
		err := CheckFeatureDatatype(`tensor "z"`, tc.dt)
		if (err == nil) != tc.ok {
			t.Errorf("CheckFeatureDatatype(%q): %v", tc.dt, err)
		}
	}
	m := zooModel("")
	if err := m.CheckFeature("output", m.Metadata.Outputs[1]); err == nil ||
		err.Error() != `model "backbone" output "logits" is FP64; a feature must be FP32, FP16 or BF16` {
		t.Errorf("FP64 output: %v", err)
	}
}

func TestFeatureSize(t *testing.T) {
	for _, tc := range []struct {
		shape []int64
		d     int
		err   string
	}{
		{[]int64{-1, 64}, 64, ""},
		{[]int64{-1, 4, 16}, 64, ""},
		{[]int64{-1, -1}, 0, "the feature must have a fixed size"},
		{[]int64{64}, 0, "want a batch dimension first"},
		{[]int64{4, 64}, 0, "want a batch dimension first"},
	} {
		d, err := zooModel("").FeatureSize(&triton.TensorMetadata{Name: "feature", Shape: tc.shape})
		if d != tc.d || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("shape %v: D=%d, %v; want %d, %q", tc.shape, d, err, tc.d, tc.err)
		}
	}
}

// TestServedVersion: the version that answers is the one asked for, or
// else the numerically highest the metadata lists (Triton's default
// policy: "10" above "9"), ignoring names that are not numbers; "" when
// none is.
func TestServedVersion(t *testing.T) {
	tests := []struct {
		asked    string
		versions []string
		want     string
	}{
		{"", []string{"1", "2"}, "2"},
		{"", []string{"2", "1"}, "2"},
		{"", []string{"9", "10"}, "10"},
		{"", []string{"10", "9"}, "10"},
		{"", []string{"0"}, "0"},
		{"", []string{"x", "3", "-4"}, "3"},
		{"", []string{"x"}, ""},
		{"", nil, ""},
		{"1", []string{"1", "2"}, "1"},
		{"7", nil, "7"},
	}
	for _, tt := range tests {
		m := &Info{Name: "m", Version: tt.asked, Metadata: &tritonpb.ModelMetadataResponse{Versions: tt.versions}}
		if got := m.ServedVersion(); got != tt.want {
			t.Errorf("asked %q, versions %q: ServedVersion() = %q, want %q", tt.asked, tt.versions, got, tt.want)
		}
	}
	if got := (&Info{Name: "m"}).ServedVersion(); got != "" {
		t.Errorf("no metadata: ServedVersion() = %q, want \"\"", got)
	}
}
