package triton

import (
	"math"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/triton/internal/tritontest"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

func TestValidateInputs(t *testing.T) {
	fp32 := tritontest.AffineMeta(FP32)
	twoIn := &tritonpb.ModelMetadataResponse{Inputs: []*tritonpb.ModelMetadataResponse_TensorMetadata{
		{Name: "A", Datatype: FP32, Shape: []int64{2}},
		{Name: "MASK", Datatype: BOOL, Shape: []int64{2}},
	}}
	text := &tritonpb.ModelMetadataResponse{Inputs: []*tritonpb.ModelMetadataResponse_TensorMetadata{
		{Name: "NAME", Datatype: BYTES, Shape: []int64{-1}},
	}}
	ones := func(n int) []float32 { return make([]float32, n) }
	fp64 := &tritonpb.ModelMetadataResponse{Inputs: []*tritonpb.ModelMetadataResponse_TensorMetadata{
		{Name: "X", Datatype: FP64, Shape: []int64{-1}},
	}}
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
		// n·8 overflows to 0 for these shapes, which an empty Raw once matched.
		{"FP64 [2^61] with no data", fp64, "m", []Tensor{{Name: "X", Datatype: FP64, Shape: []int64{1 << 61}}}, nil, nil,
			`model "m" input "X": shape [2305843009213693952] has a dimension above 2147483647`},
		{"FP64 [2^31 2^31 2^31 8] with no data", &tritonpb.ModelMetadataResponse{Inputs: []*tritonpb.ModelMetadataResponse_TensorMetadata{
			{Name: "X", Datatype: FP64, Shape: []int64{-1, -1, -1, -1}}}}, "m",
			[]Tensor{{Name: "X", Datatype: FP64, Shape: []int64{1 << 31, 1 << 31, 1 << 31, 8}}}, nil, nil,
			`model "m" input "X": shape [2147483648 2147483648 2147483648 8] has a dimension above 2147483647`},
		{"FP64 raw not whole elements", fp64, "m", []Tensor{{Name: "X", Datatype: FP64, Shape: []int64{1}, Raw: make([]byte, 9)}}, nil, nil,
			`model "m" input "X": 9 bytes of data, but shape [1] of FP64 needs 8`},
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

// TestCheckDataNoOverflow checks checkData on its own with element counts
// whose byte size overflows an int64: no data may match them.
func TestCheckDataNoOverflow(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		raw  int
		want string
	}{
		{1 << 61, 0, "0 bytes of data, but shape [] of FP64 needs 2305843009213693952×8 bytes"},
		{1 << 62, 0, "needs 4611686018427387904×8 bytes"},
		{1 << 60, 0, "needs 1152921504606846976×8 bytes"},
		{2, 16, ""},
		{2, 17, "17 bytes of data, but shape [] of FP64 needs 16"},
	} {
		err := checkData(Tensor{Name: "X", Datatype: FP64, Raw: make([]byte, tc.raw)}, tc.n)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("n=%d, %d bytes: %v", tc.n, tc.raw, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("n=%d, %d bytes: error %v, want %q", tc.n, tc.raw, err, tc.want)
		}
	}
}

// TestDecodeInferResponseHugeShape checks that a response cannot claim an
// output of more elements than it carries by choosing a shape whose byte
// size overflows.
func TestDecodeInferResponseHugeShape(t *testing.T) {
	for _, shape := range [][]int64{{1 << 61}, {1 << 31, 1 << 31, 1 << 31, 8}, {1 << 30, 1 << 30}} {
		pb := &tritonpb.ModelInferResponse{
			ModelName:         "m",
			Outputs:           []*tritonpb.ModelInferResponse_InferOutputTensor{{Name: "Y", Datatype: FP64, Shape: shape}},
			RawOutputContents: [][]byte{{}},
		}
		if r, err := DecodeInferResponse(pb); err == nil {
			t.Errorf("shape %v with no data: accepted %+v", shape, r.Outputs)
		}
	}
}

// TestResponseOutput: the one output asked for, raw or typed, checked
// against its shape; an output without data, a missing one and data that
// do not fill the shape are errors.
func TestResponseOutput(t *testing.T) {
	out := func(name string, contents *tritonpb.InferTensorContents) *tritonpb.ModelInferResponse_InferOutputTensor {
		return &tritonpb.ModelInferResponse_InferOutputTensor{Name: name, Datatype: FP32, Shape: []int64{1, 2}, Contents: contents}
	}
	one, two := math.Float32bits(1), math.Float32bits(2)
	rawY := []byte{byte(one), byte(one >> 8), byte(one >> 16), byte(one >> 24), byte(two), byte(two >> 8), byte(two >> 16), byte(two >> 24)}
	for _, tc := range []struct {
		name string
		pb   *tritonpb.ModelInferResponse
		want []float32
		err  string
	}{
		{"raw", &tritonpb.ModelInferResponse{Outputs: []*tritonpb.ModelInferResponse_InferOutputTensor{out("X", nil), out("Y", nil)},
			RawOutputContents: [][]byte{make([]byte, 8), rawY}}, []float32{1, 2}, ""},
		{"typed", &tritonpb.ModelInferResponse{Outputs: []*tritonpb.ModelInferResponse_InferOutputTensor{out("Y", &tritonpb.InferTensorContents{Fp32Contents: []float32{1, 2}})}},
			[]float32{1, 2}, ""},
		{"no data", &tritonpb.ModelInferResponse{Outputs: []*tritonpb.ModelInferResponse_InferOutputTensor{out("Y", nil)}}, nil, `output "Y" has no data`},
		{"raw for some outputs only", &tritonpb.ModelInferResponse{Outputs: []*tritonpb.ModelInferResponse_InferOutputTensor{out("X", nil), out("Y", nil)},
			RawOutputContents: [][]byte{rawY}}, nil, `output "Y" has no data`},
		{"missing", &tritonpb.ModelInferResponse{Outputs: []*tritonpb.ModelInferResponse_InferOutputTensor{out("X", nil)},
			RawOutputContents: [][]byte{rawY}}, nil, `response has no output "Y"`},
		{"short", &tritonpb.ModelInferResponse{Outputs: []*tritonpb.ModelInferResponse_InferOutputTensor{out("Y", nil)},
			RawOutputContents: [][]byte{rawY[:4]}}, nil, `output "Y": `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResponseOutput(tc.pb, "Y")
			if tc.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
					t.Fatalf("error %v, want one starting %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			v, err := got.AsFloat32()
			if err != nil || !slices.Equal(v, tc.want) || got.Name != "Y" {
				t.Errorf("%s = %v (%v), want %v", got.Name, v, err, tc.want)
			}
		})
	}
}
