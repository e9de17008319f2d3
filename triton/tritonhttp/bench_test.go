package tritonhttp

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// benchRequest returns the body of a request with one FP32 input of the
// given shape, random values, encoded as binary or JSON.
func benchRequest(b *testing.B, shape []int64, binary bool) ([]byte, string) {
	n, _ := triton.NumElements(shape)
	r := rand.New(rand.NewPCG(1, 1))
	v := make([]float32, n)
	for i := range v {
		v[i] = r.Float32()
	}
	in := triton.NewFP32("image", shape, v)
	body, hl, err := EncodeRequest(&tritonpb.ModelInferRequest{
		Inputs:           []*tritonpb.ModelInferRequest_InferInputTensor{{Name: in.Name, Datatype: in.Datatype, Shape: in.Shape}},
		Outputs:          []*tritonpb.ModelInferRequest_InferRequestedOutputTensor{{Name: "logits"}},
		RawInputContents: [][]byte{in.Raw},
	}, binary)
	if err != nil {
		b.Fatal(err)
	}
	if hl < 0 {
		return body, ""
	}
	return body, strconv.Itoa(hl)
}

func benchParse(b *testing.B, body []byte, hl string) {
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseRequest(body, hl); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseRequestBinary parses a binary request of 256 MNIST-sized
// FP32 images (800 KB).
func BenchmarkParseRequestBinary(b *testing.B) {
	body, hl := benchRequest(b, []int64{256, 1, 28, 28}, true)
	benchParse(b, body, hl)
}

// BenchmarkParseRequestJSON parses a JSON request of 8×784 FP32 values.
func BenchmarkParseRequestJSON(b *testing.B) {
	body, hl := benchRequest(b, []int64{8, 784}, false)
	benchParse(b, body, hl)
}

func benchResponse(b *testing.B, binary bool) {
	r := rand.New(rand.NewPCG(2, 2))
	v := make([]float32, 256*10)
	for i := range v {
		v[i] = r.Float32()
	}
	out := triton.NewFP32("logits", []int64{256, 10}, v)
	resp := &tritonpb.ModelInferResponse{ModelName: "m", ModelVersion: "1",
		Outputs:           []*tritonpb.ModelInferResponse_InferOutputTensor{{Name: out.Name, Datatype: out.Datatype, Shape: out.Shape}},
		RawOutputContents: [][]byte{out.Raw}}
	header := `{"inputs":[]}`
	if binary {
		header = `{"inputs":[],"parameters":{"binary_data_output":true}}`
	}
	req, err := ParseRequest([]byte(header), "")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		body, _, err := EncodeResponse(resp, req)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(body)))
	}
}

// BenchmarkEncodeResponseBinary encodes 256×10 FP32 logits as binary.
func BenchmarkEncodeResponseBinary(b *testing.B) { benchResponse(b, true) }

// BenchmarkEncodeResponseJSON encodes 256×10 FP32 logits as JSON.
func BenchmarkEncodeResponseJSON(b *testing.B) { benchResponse(b, false) }
