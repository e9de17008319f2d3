package triton

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/triton/tritonpb"
)

func affineMeta(dt string) *tritonpb.ModelMetadataResponse {
	return &tritonpb.ModelMetadataResponse{
		Name:     "affine_" + map[string]string{FP32: "fp32", FP16: "fp16"}[dt],
		Versions: []string{"1"},
		Platform: "python",
		Inputs:   []*tritonpb.ModelMetadataResponse_TensorMetadata{{Name: "INPUT0", Datatype: dt, Shape: []int64{-1, 4}}},
		Outputs:  []*tritonpb.ModelMetadataResponse_TensorMetadata{{Name: "OUTPUT0", Datatype: dt, Shape: []int64{-1, 4}}},
	}
}

func TestValidateInputs(t *testing.T) {
	fp32 := affineMeta(FP32)
	twoIn := &tritonpb.ModelMetadataResponse{Inputs: []*tritonpb.ModelMetadataResponse_TensorMetadata{
		{Name: "A", Datatype: FP32, Shape: []int64{2}},
		{Name: "MASK", Datatype: BOOL, Shape: []int64{2}},
	}}
	text := &tritonpb.ModelMetadataResponse{Inputs: []*tritonpb.ModelMetadataResponse_TensorMetadata{
		{Name: "NAME", Datatype: BYTES, Shape: []int64{-1}},
	}}
	ones := func(n int) []float32 { return make([]float32, n) }
	tests := []struct {
		name     string
		meta     *tritonpb.ModelMetadataResponse
		model    string
		inputs   []Tensor
		outputs  []string
		optional func(string) bool
		want     string // "" for success
	}{
		{"ok", fp32, "affine_fp32", []Tensor{NewFP32("INPUT0", []int64{3, 4}, ones(12))}, []string{"OUTPUT0"}, nil, ""},
		{"ok zero rows", fp32, "affine_fp32", []Tensor{NewFP32("INPUT0", []int64{0, 4}, nil)}, nil, nil, ""},
		{"unknown input", fp32, "affine_fp32", []Tensor{NewFP32("INPUT1", []int64{1, 4}, ones(4))}, nil, nil,
			`model "affine_fp32" input "INPUT1": the model has no such input (inputs: [INPUT0])`},
		{"duplicate input", fp32, "affine_fp32", []Tensor{NewFP32("INPUT0", []int64{1, 4}, ones(4)), NewFP32("INPUT0", []int64{1, 4}, ones(4))}, nil, nil,
			`model "affine_fp32" input "INPUT0": given more than once`},
		{"missing input", fp32, "affine_fp32", nil, nil, nil,
			`model "affine_fp32" input "INPUT0": missing (the model needs FP32 [-1 4])`},
		{"missing required input", twoIn, "m", []Tensor{NewFP32("A", []int64{2}, ones(2))}, nil, func(string) bool { return false },
			`model "m" input "MASK": missing (the model needs BOOL [2])`},
		{"missing optional input", twoIn, "m", []Tensor{NewFP32("A", []int64{2}, ones(2))}, nil, func(n string) bool { return n == "MASK" }, ""},
		{"datatype", fp32, "affine_fp32", []Tensor{NewFP16("INPUT0", []int64{1, 4}, ones(4))}, nil, nil,
			`model "affine_fp32" input "INPUT0": datatype FP16 does not match FP32`},
		{"unknown datatype", fp32, "affine_fp32", []Tensor{{Name: "INPUT0", Datatype: "FP8", Shape: []int64{1, 4}}}, nil, nil,
			`model "affine_fp32" input "INPUT0": unknown datatype "FP8"`},
		{"shape", fp32, "affine_fp32", []Tensor{NewFP32("INPUT0", []int64{2, 5}, ones(10))}, nil, nil,
			`model "affine_fp32" input "INPUT0": shape [2 5] does not match [-1 4]`},
		{"rank", fp32, "affine_fp32", []Tensor{NewFP32("INPUT0", []int64{4}, ones(4))}, nil, nil,
			`model "affine_fp32" input "INPUT0": shape [4] does not match [-1 4]`},
		{"negative dimension", fp32, "affine_fp32", []Tensor{NewFP32("INPUT0", []int64{-1, 4}, ones(4))}, nil, nil,
			`model "affine_fp32" input "INPUT0": shape [-1 4] does not match [-1 4]`},
		{"raw too short", fp32, "affine_fp32", []Tensor{NewFP32("INPUT0", []int64{2, 4}, ones(7))}, nil, nil,
			`model "affine_fp32" input "INPUT0": 28 bytes of data, but shape [2 4] of FP32 needs 32`},
		{"raw too long", fp32, "affine_fp32", []Tensor{NewFP32("INPUT0", []int64{1, 4}, ones(5))}, nil, nil,
			`model "affine_fp32" input "INPUT0": 20 bytes of data, but shape [1 4] of FP32 needs 16`},
		{"unknown output", fp32, "affine_fp32", []Tensor{NewFP32("INPUT0", []int64{1, 4}, ones(4))}, []string{"OUTPUT9"}, nil,
			`model "affine_fp32" output "OUTPUT9": the model has no such output (outputs: [OUTPUT0])`},
		{"bytes ok", text, "runtime_info", []Tensor{NewStrings("NAME", []int64{2}, []string{"numpy", ""})}, nil, nil, ""},
		{"bytes count", text, "runtime_info", []Tensor{NewStrings("NAME", []int64{3}, []string{"numpy", ""})}, nil, nil,
			`model "runtime_info" input "NAME": 2 BYTES elements, but shape [3] needs 3`},
		{"bytes malformed", text, "runtime_info", []Tensor{{Name: "NAME", Datatype: BYTES, Shape: []int64{1}, Raw: []byte{9, 0, 0, 0, 'x'}}}, nil, nil,
			`model "runtime_info" input "NAME": BYTES element 0: length 9, but 1 bytes left`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateInputs(tt.meta, tt.model, tt.inputs, tt.outputs, tt.optional)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			st, ok := status.FromError(err)
			if !ok || st.Code() != codes.InvalidArgument {
				t.Fatalf("error %v, want an INVALID_ARGUMENT status", err)
			}
			if st.Message() != tt.want {
				t.Errorf("message\n got %s\nwant %s", st.Message(), tt.want)
			}
		})
	}
}
