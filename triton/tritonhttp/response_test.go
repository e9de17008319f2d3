package tritonhttp

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// response builds a gRPC response with the tensors as outputs, their data
// in raw_output_contents.
func response(ts ...triton.Tensor) *tritonpb.ModelInferResponse {
	resp := &tritonpb.ModelInferResponse{ModelName: "m", ModelVersion: "1"}
	for _, t := range ts {
		resp.Outputs = append(resp.Outputs, &tritonpb.ModelInferResponse_InferOutputTensor{Name: t.Name, Datatype: t.Datatype, Shape: t.Shape})
		resp.RawOutputContents = append(resp.RawOutputContents, t.Raw)
	}
	return resp
}

func mustParse(t *testing.T, header string) *Request {
	t.Helper()
	r, err := ParseRequest([]byte(header), "")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestEncodeResponseJSON(t *testing.T) {
	resp := response(
		triton.NewFP32("f32", []int64{2}, []float32{1.2, float32(math.NaN())}),
		triton.NewInt8("i8", []int64{3}, []int8{-1, 0, 127}),
		triton.NewBool("b", []int64{2}, []bool{true, false}),
		triton.NewUint64("u64", []int64{1}, []uint64{math.MaxUint64}),
		triton.NewInt64("i64", []int64{1}, []int64{math.MinInt64}),
		triton.NewUint16("u16", []int64{1}, []uint16{65535}),
		triton.NewInt32("i32", []int64{1}, []int32{-7}),
		triton.NewFP64("f64", []int64{1, 3}, []float64{0.1, math.Inf(-1), 2}),
		triton.NewBytes("s", []int64{2}, [][]byte{[]byte("a\"\n"), []byte("\xff")}),
	)
	resp.Id = "r1"
	resp.Parameters = map[string]*tritonpb.InferParameter{"q": param(2.0), "p": param(3), "s": param("x"), "t": param(true), "u": param(uint64(5))}
	body, hl, err := EncodeResponse(resp, mustParse(t, `{"inputs":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"r1","model_name":"m","model_version":"1","parameters":{"p":3,"q":2.0,"s":"x","t":true,"u":5},"outputs":[` +
		`{"name":"f32","datatype":"FP32","shape":[2],"data":[1.2,NaN]},` +
		`{"name":"i8","datatype":"INT8","shape":[3],"data":[-1,0,127]},` +
		`{"name":"b","datatype":"BOOL","shape":[2],"data":[true,false]},` +
		`{"name":"u64","datatype":"UINT64","shape":[1],"data":[18446744073709551615]},` +
		`{"name":"i64","datatype":"INT64","shape":[1],"data":[-9223372036854775808]},` +
		`{"name":"u16","datatype":"UINT16","shape":[1],"data":[65535]},` +
		`{"name":"i32","datatype":"INT32","shape":[1],"data":[-7]},` +
		`{"name":"f64","datatype":"FP64","shape":[1,3],"data":[0.1,-Infinity,2.0]},` +
		`{"name":"s","datatype":"BYTES","shape":[2],"data":["a\"\n","` + "\xff" + `"]}]}`
	if string(body) != want || hl != -1 {
		t.Errorf("body (header length %d)\n%s\nwant (-1)\n%s", hl, body, want)
	}
}

func TestEncodeResponseBinary(t *testing.T) {
	a := triton.NewFP32("A", []int64{1, 2}, []float32{1, 2})
	b := triton.NewStrings("B", []int64{2}, []string{"x", "yz"})
	c := triton.NewFP16("C", []int64{1}, []float32{0.5})
	d := triton.NewInt32("D", []int64{1}, []int32{9})
	req := mustParse(t, `{"inputs":[],"outputs":[{"name":"A","parameters":{"binary_data":true}},{"name":"B","parameters":{"binary_data":true}},{"name":"C","parameters":{"binary_data":true}},{"name":"D"}]}`)
	body, hl, err := EncodeResponse(response(a, b, c, d), req)
	if err != nil {
		t.Fatal(err)
	}
	header := `{"model_name":"m","model_version":"1","outputs":[` +
		`{"name":"A","datatype":"FP32","shape":[1,2],"parameters":{"binary_data_size":8}},` +
		`{"name":"B","datatype":"BYTES","shape":[2],"parameters":{"binary_data_size":11}},` +
		`{"name":"C","datatype":"FP16","shape":[1],"parameters":{"binary_data_size":2}},` +
		`{"name":"D","datatype":"INT32","shape":[1],"data":[9]}]}`
	want := header + string(a.Raw) + string(b.Raw) + string(c.Raw)
	if string(body) != want || hl != len(header) {
		t.Errorf("body (header length %d)\n%q\nwant (%d)\n%q", hl, body, len(header), want)
	}
}

// TestEncodeResponseZeroBytes checks Triton's rule, seen on the server, that
// a body whose binary outputs are all empty is plain JSON, without a header
// length, though the outputs carry binary_data_size 0.
func TestEncodeResponseZeroBytes(t *testing.T) {
	req := mustParse(t, `{"inputs":[],"parameters":{"binary_data_output":true}}`)
	body, hl, err := EncodeResponse(response(triton.NewFP32("OUTPUT0", []int64{0, 4}, nil)), req)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model_name":"m","model_version":"1","outputs":[{"name":"OUTPUT0","datatype":"FP32","shape":[0,4],"parameters":{"binary_data_size":0}}]}`
	if string(body) != want || hl != -1 {
		t.Errorf("body (header length %d)\n%s\nwant (-1)\n%s", hl, body, want)
	}
}

func TestEncodeResponseHalfAsJSON(t *testing.T) {
	for _, out := range []triton.Tensor{
		triton.NewFP16("OUTPUT0", []int64{1}, []float32{1}),
		triton.NewBF16("OUTPUT0", []int64{1}, []float32{1}),
	} {
		_, _, err := EncodeResponse(response(out), mustParse(t, `{"inputs":[]}`))
		var re *RequestError
		if !errors.As(err, &re) {
			t.Fatalf("%s as JSON: error %v, want a *RequestError", out.Datatype, err)
		}
		if want := `output "OUTPUT0": ` + out.Datatype + ` data cannot be sent as JSON; ask for it as binary data`; err.Error() != want {
			t.Errorf("error %q, want %q", err, want)
		}
	}
}

// TestEncodeResponseSharedMemory checks that an output requested into
// shared memory (which Triton's gRPC server answers with empty raw
// contents) gets neither data nor parameters, as in Triton's HTTP answer.
func TestEncodeResponseSharedMemory(t *testing.T) {
	req := mustParse(t, `{"inputs":[],"outputs":[{"name":"SUM","parameters":{"shared_memory_region":"r","shared_memory_byte_size":16}},{"name":"DIFF"}]}`)
	resp := response(triton.Tensor{Name: "SUM", Datatype: "FP32", Shape: []int64{1, 4}}, triton.NewFP32("DIFF", []int64{1, 4}, []float32{-9, -19, -29, -39}))
	body, hl, err := EncodeResponse(resp, req)
	if err != nil {
		t.Fatal(err)
	}
	// Triton's own answer, seen on the server (it writes -9.0 the same way).
	want := `{"model_name":"m","model_version":"1","outputs":[{"name":"SUM","datatype":"FP32","shape":[1,4]},{"name":"DIFF","datatype":"FP32","shape":[1,4],"data":[-9.0,-19.0,-29.0,-39.0]}]}`
	if string(body) != want || hl != -1 {
		t.Errorf("body (header length %d)\n%s\nwant\n%s", hl, body, want)
	}
}

func TestEncodeResponseTypedContents(t *testing.T) {
	resp := &tritonpb.ModelInferResponse{ModelName: "m", ModelVersion: "2", Outputs: []*tritonpb.ModelInferResponse_InferOutputTensor{
		{Name: "x", Datatype: "UINT8", Shape: []int64{2}, Contents: &tritonpb.InferTensorContents{UintContents: []uint32{7, 255}}},
	}}
	body, _, err := EncodeResponse(resp, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"model_name":"m","model_version":"2","outputs":[{"name":"x","datatype":"UINT8","shape":[2],"data":[7,255]}]}`; string(body) != want {
		t.Errorf("body\n%s\nwant\n%s", body, want)
	}
}

func TestEncodeResponseInconsistent(t *testing.T) {
	for name, c := range map[string]struct {
		resp *tritonpb.ModelInferResponse
		want string
	}{
		"short data": {response(triton.Tensor{Name: "x", Datatype: "FP32", Shape: []int64{2}, Raw: make([]byte, 7)}),
			`tritonhttp: output "x": 7 bytes of data, but shape [2] of FP32 needs 8`},
		"BYTES count": {response(triton.NewStrings("x", []int64{3}, []string{"a"})),
			`tritonhttp: output "x": 1 BYTES elements, but shape [3] needs 3`},
		"BYTES truncated": {response(triton.Tensor{Name: "x", Datatype: "BYTES", Shape: []int64{1}, Raw: []byte{9, 0, 0, 0, 'a'}}),
			`tritonhttp: output "x": BYTES element 0: length 9, but 1 bytes left`},
		"unknown datatype": {response(triton.Tensor{Name: "x", Datatype: "FP8", Shape: []int64{1}, Raw: []byte{1}}),
			`tritonhttp: output "x": unknown datatype "FP8"`},
		"raw count": {&tritonpb.ModelInferResponse{Outputs: []*tritonpb.ModelInferResponse_InferOutputTensor{{Name: "a"}, {Name: "b"}}, RawOutputContents: [][]byte{{}}},
			"tritonhttp: response has 1 raw output contents for 2 outputs"},
		"negative shape": {response(triton.Tensor{Name: "x", Datatype: "FP32", Shape: []int64{-1}}),
			`tritonhttp: output "x": shape [-1] has a negative dimension`},
	} {
		_, _, err := EncodeResponse(c.resp, nil)
		var re *RequestError
		if err == nil || errors.As(err, &re) || err.Error() != c.want {
			t.Errorf("%s: error %v, want %q (not a *RequestError)", name, err, c.want)
		}
	}
}

// TestDecodeResponseTriton decodes bodies Triton 2.51 sent (seen on the
// server), and compares with values computed here.
func TestDecodeResponseTriton(t *testing.T) {
	jsonBody := `{"id":"a","model_name":"affine_fp32","model_version":"1","outputs":[{"name":"OUTPUT0","datatype":"FP32","shape":[1,4],"data":[1.2000000476837159,5.0,7.0,9.0]}]}`
	binHeader := `{"model_name":"affine_fp32","model_version":"1","outputs":[{"name":"OUTPUT0","datatype":"FP32","shape":[1,4],"parameters":{"binary_data_size":16}}]}`
	binBody := binHeader + "\x9a\x99\x99?\x00\x00\xa0@\x00\x00\xe0@\x00\x00\x10A"
	want := le32(2*0.1+1, 5, 7, 9)
	for _, c := range []struct{ body, hl string }{{jsonBody, ""}, {binBody, strconv.Itoa(len(binHeader))}} {
		resp, err := DecodeResponse([]byte(c.body), c.hl)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ModelName != "affine_fp32" || resp.ModelVersion != "1" || len(resp.Outputs) != 1 ||
			resp.Outputs[0].Name != "OUTPUT0" || resp.Outputs[0].Datatype != "FP32" || len(resp.Outputs[0].Parameters) != 0 {
			t.Errorf("response %v", resp)
		}
		if len(resp.RawOutputContents) != 1 || !bytes.Equal(resp.RawOutputContents[0], want) {
			t.Errorf("raw %x, want %x", resp.RawOutputContents, want)
		}
	}
	_, err := DecodeResponse([]byte(`{"error":"sending FP16 data via JSON is not supported. Please use the binary data format for output"}`), "")
	if err == nil || err.Error() != "tritonhttp: response: server error: sending FP16 data via JSON is not supported. Please use the binary data format for output" {
		t.Errorf("error body: %v", err)
	}
	// An output in shared memory has neither data nor binary_data_size.
	resp, err := DecodeResponse([]byte(`{"model_name":"two_inputs","model_version":"1","outputs":[{"name":"SUM","datatype":"FP32","shape":[1,4]},{"name":"DIFF","datatype":"FP32","shape":[1,4],"data":[-9.0,-19.0,-29.0,-39.0]}]}`), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.RawOutputContents) != 2 || len(resp.RawOutputContents[0]) != 0 || !bytes.Equal(resp.RawOutputContents[1], le32(-9, -19, -29, -39)) {
		t.Errorf("raw %x", resp.RawOutputContents)
	}
}

func TestDecodeResponseErrors(t *testing.T) {
	for _, c := range []struct{ body, hl, want string }{
		{`{"outputs":[{"name":"x","datatype":"FP32","shape":[1],"parameters":{"binary_data_size":4}}]}`, "", "binary_data_size given without an Inference-Header-Content-Length header"},
		{`{"outputs":[{"name":"x","datatype":"FP32","shape":[2],"data":[1]}]}`, "", `output "x": data has 1 elements, but shape [2] needs 2`},
		{`{"outputs":[{"name":"x","datatype":"FP16","shape":[1],"data":[1]}]}`, "", `output "x": FP16 data cannot be given as JSON; send it as binary data`},
		{`{"outputs":{}}`, "", "outputs: want an array, got an object at offset 11"},
		{`{"outputs":[],"outputs":[]}`, "", `JSON header: duplicate key "outputs"`},
		{`{"model_name":1}`, "", "model_name: want a string, got a number at offset 14"},
	} {
		_, err := DecodeResponse([]byte(c.body), c.hl)
		if want := "tritonhttp: response: " + c.want; err == nil || err.Error() != want {
			t.Errorf("%s: error %v, want %q", c.body, err, want)
		}
	}
}

// TestEncodeResponseLarge checks the framing of a large binary body and
// that the body is built without growing its buffer.
func TestEncodeResponseLarge(t *testing.T) {
	out := triton.NewFP32("OUTPUT0", []int64{256, 10}, make([]float32, 2560))
	req := mustParse(t, `{"inputs":[],"parameters":{"binary_data_output":true}}`)
	body, hl, err := EncodeResponse(response(out), req)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(body[:hl]), `"binary_data_size":10240}}]}`) || len(body) != hl+10240 {
		t.Errorf("header %s, body %d bytes", body[:hl], len(body))
	}
	allocs := testing.AllocsPerRun(10, func() { EncodeResponse(response(out), req) })
	if allocs > 8 {
		t.Errorf("%v allocations per EncodeResponse", allocs)
	}
}
