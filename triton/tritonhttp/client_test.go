package tritonhttp

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// randomTensors returns one tensor of every datatype with random values
// (finite floats, so that JSON carries them exactly), some empty.
func randomTensors(r *rand.Rand, half bool) []triton.Tensor {
	n := 1 + r.IntN(5)
	shape := []int64{int64(n)}
	f32 := make([]float32, n)
	f64 := make([]float64, n)
	strs := make([][]byte, n)
	for i := range n {
		for f32[i] = math.Float32frombits(r.Uint32()); math.IsNaN(float64(f32[i])) || math.IsInf(float64(f32[i]), 0); {
			f32[i] = math.Float32frombits(r.Uint32())
		}
		for f64[i] = math.Float64frombits(r.Uint64()); math.IsNaN(f64[i]) || math.IsInf(f64[i], 0); {
			f64[i] = math.Float64frombits(r.Uint64())
		}
		s := make([]byte, r.IntN(6))
		for j := range s {
			s[j] = byte(r.IntN(256))
		}
		strs[i] = s
	}
	ints := func() []int64 {
		v := make([]int64, n)
		for i := range v {
			v[i] = int64(r.Uint64())
		}
		return v
	}
	i64 := ints()
	narrow := func(dt string, size int) triton.Tensor {
		raw := make([]byte, 0, n*size)
		for _, v := range i64 {
			for b := range size {
				raw = append(raw, byte(uint64(v)>>(8*b)))
			}
		}
		return triton.Tensor{Name: "in_" + dt, Datatype: dt, Shape: shape, Raw: raw}
	}
	bools := make([]bool, n)
	for i := range bools {
		bools[i] = r.IntN(2) == 1
	}
	ts := []triton.Tensor{
		triton.NewBool("in_BOOL", shape, bools),
		narrow(triton.UINT8, 1), narrow(triton.UINT16, 2), narrow(triton.UINT32, 4), narrow(triton.UINT64, 8),
		narrow(triton.INT8, 1), narrow(triton.INT16, 2), narrow(triton.INT32, 4), narrow(triton.INT64, 8),
		triton.NewFP32("in_FP32", shape, f32),
		triton.NewFP64("in_FP64", []int64{1, int64(n)}, f64),
		triton.NewBytes("in_BYTES", shape, strs),
		triton.NewFP32("in_empty", []int64{0, 3}, nil),
		triton.NewFP32("in_scalar", []int64{}, f32[:1]),
	}
	if half {
		ts = append(ts, triton.NewFP16("in_FP16", shape, f32), triton.NewBF16("in_BF16", shape, f32))
	}
	return ts
}

func requestOf(ts []triton.Tensor) *tritonpb.ModelInferRequest {
	req := &tritonpb.ModelInferRequest{
		Id: "id-\"1\"",
		Parameters: map[string]*tritonpb.InferParameter{
			"s": param("x\ny"), "b": param(false), "i": param(-3), "d": param(2.0), "nan": param(math.NaN()), "tiny": param(5e-324),
		},
	}
	for _, t := range ts {
		req.Inputs = append(req.Inputs, &tritonpb.ModelInferRequest_InferInputTensor{Name: t.Name, Datatype: t.Datatype, Shape: t.Shape})
		req.RawInputContents = append(req.RawInputContents, t.Raw)
	}
	return req
}

// TestRequestRoundTrip encodes requests both ways and checks that
// ParseRequest gives back the same message.
func TestRequestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 200 {
		for _, binary := range []bool{true, false} {
			req := requestOf(randomTensors(r, binary))
			req.Outputs = []*tritonpb.ModelInferRequest_InferRequestedOutputTensor{
				{Name: "o1"}, {Name: "o2", Parameters: map[string]*tritonpb.InferParameter{"classification": param(2)}},
			}
			body, hl, err := EncodeRequest(req, binary)
			if err != nil {
				t.Fatal(err)
			}
			header := ""
			if hl >= 0 {
				header = strconv.Itoa(hl)
			}
			got, err := ParseRequest(body, header)
			if err != nil {
				t.Fatalf("binary %v: %v\n%s", binary, err, body)
			}
			if !proto.Equal(got.Proto, req) {
				t.Fatalf("binary %v: got\n%s\nwant\n%s\nbody %q", binary, prototext.Format(got.Proto), prototext.Format(req), body)
			}
			for _, o := range req.Outputs {
				if got.WantsBinary(o.Name) != binary {
					t.Errorf("binary %v: WantsBinary(%q) = %v", binary, o.Name, !binary)
				}
			}
		}
	}
}

func TestEncodeRequestNoOutputs(t *testing.T) {
	req := requestOf([]triton.Tensor{triton.NewFP32("x", []int64{1}, []float32{1})})
	req.Parameters = map[string]*tritonpb.InferParameter{"binary_data_output": param(false)}
	body, hl, err := EncodeRequest(req, true)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"id-\"1\"","parameters":{"binary_data_output":true},"inputs":[{"name":"x","datatype":"FP32","shape":[1],"parameters":{"binary_data_size":4}}]}`
	if string(body[:hl]) != want {
		t.Errorf("header\n%s\nwant\n%s", body[:hl], want)
	}
	r, err := ParseRequest(body, strconv.Itoa(hl))
	if err != nil || !r.WantsBinary("anything") {
		t.Errorf("ParseRequest: %v, WantsBinary %v", err, err == nil && r.WantsBinary("anything"))
	}
	body, hl, err = EncodeRequest(req, false)
	if want := `{"id":"id-\"1\"","parameters":{"binary_data_output":false},"inputs":[{"name":"x","datatype":"FP32","shape":[1],"data":[1.0]}]}`; err != nil || hl != -1 || string(body) != want {
		t.Errorf("JSON body (%d, %v)\n%s\nwant\n%s", hl, err, body, want)
	}
}

func TestEncodeRequestErrors(t *testing.T) {
	half := requestOf([]triton.Tensor{triton.NewFP16("h", []int64{1}, []float32{1})})
	if _, _, err := EncodeRequest(half, false); err == nil || err.Error() != `tritonhttp: input "h": FP16 data have no JSON form: send them as binary` {
		t.Errorf("FP16 as JSON: %v", err)
	}
	short := requestOf([]triton.Tensor{{Name: "x", Datatype: "FP32", Shape: []int64{2}, Raw: make([]byte, 4)}})
	if _, _, err := EncodeRequest(short, true); err == nil || err.Error() != `tritonhttp: input "x": 4 bytes of data, but shape [2] of FP32 needs 8` {
		t.Errorf("short data: %v", err)
	}
	none := &tritonpb.ModelInferRequest{Inputs: []*tritonpb.ModelInferRequest_InferInputTensor{{Name: "x", Datatype: "FP32", Shape: []int64{1}}}}
	if _, _, err := EncodeRequest(none, true); err == nil || err.Error() != `tritonhttp: input "x": no data` {
		t.Errorf("no data: %v", err)
	}
}

// TestEncodeRequestTypedAndSharedMemory encodes a request whose data come
// as typed contents, with an input in shared memory.
func TestEncodeRequestTypedAndSharedMemory(t *testing.T) {
	req := &tritonpb.ModelInferRequest{Inputs: []*tritonpb.ModelInferRequest_InferInputTensor{
		{Name: "a", Datatype: "INT16", Shape: []int64{2}, Contents: &tritonpb.InferTensorContents{IntContents: []int32{-2, 300}}},
		{Name: "b", Datatype: "FP32", Shape: []int64{2}, Parameters: map[string]*tritonpb.InferParameter{"shared_memory_region": param("r"), "shared_memory_byte_size": param(8)}},
	}, Outputs: []*tritonpb.ModelInferRequest_InferRequestedOutputTensor{
		{Name: "o", Parameters: map[string]*tritonpb.InferParameter{"shared_memory_region": param("r"), "shared_memory_offset": param(8)}},
	}}
	body, hl, err := EncodeRequest(req, true)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"inputs":[{"name":"a","datatype":"INT16","shape":[2],"parameters":{"binary_data_size":4}},` +
		`{"name":"b","datatype":"FP32","shape":[2],"parameters":{"shared_memory_byte_size":8,"shared_memory_region":"r"}}],` +
		`"outputs":[{"name":"o","parameters":{"shared_memory_offset":8,"shared_memory_region":"r"}}]}` + "\xfe\xff\x2c\x01"
	if string(body) != want || hl != len(want)-4 {
		t.Errorf("body (%d)\n%q\nwant\n%q", hl, body, want)
	}
}

// TestResponseRoundTrip encodes responses as binary and as JSON and checks
// that DecodeResponse gives back the same message.
func TestResponseRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 200 {
		for _, binary := range []bool{true, false} {
			ts := randomTensors(r, binary)
			resp := response(ts...)
			resp.Id = "r"
			resp.Parameters = map[string]*tritonpb.InferParameter{"x": param(1.5), "y": param(int64(-1))}
			header := `{"inputs":[]`
			if binary {
				header += `,"parameters":{"binary_data_output":true}`
			}
			body, hl, err := EncodeResponse(resp, mustParse(t, header+"}"))
			if err != nil {
				t.Fatal(err)
			}
			hlv := ""
			if hl >= 0 {
				hlv = strconv.Itoa(hl)
			}
			got, err := DecodeResponse(body, hlv)
			if err != nil {
				t.Fatalf("binary %v: %v\n%q", binary, err, body)
			}
			if !proto.Equal(got, resp) {
				t.Fatalf("binary %v: got\n%s\nwant\n%s", binary, prototext.Format(got), prototext.Format(resp))
			}
			if binary != strings.Contains(string(body), "binary_data_size") {
				t.Fatalf("binary %v: body %q", binary, body)
			}
		}
	}
}
