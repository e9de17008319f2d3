package tritonhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/tritonpb"

	"github.com/mergectl/react-triton/internal/testutil"
)

// These tests run against a real Triton serving triton/testdata/repo, at
// TRITON_GRPC_ADDR and TRITON_HTTP_ADDR (scripts/test.sh starts one). They
// send the same request to Triton's HTTP endpoint, and through ParseRequest
// to its gRPC endpoint, and compare the answers.

func realTriton(t *testing.T) (grpcAddr, httpAddr string) {
	t.Helper()
	addrs := testutil.Env(t, "TRITON_GRPC_ADDR", "TRITON_HTTP_ADDR")
	return addrs[0], addrs[1]
}

// tritonPair holds the two ends of one real Triton.
type tritonPair struct {
	http string
	grpc *triton.Client
}

func newTritonPair(t *testing.T) *tritonPair {
	grpcAddr, httpAddr := realTriton(t)
	c, err := triton.Dial(context.Background(), grpcAddr, triton.WithTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &tritonPair{http: httpAddr, grpc: c}
}

// httpAnswer is Triton's HTTP answer.
type httpAnswer struct {
	status       int
	contentType  string
	headerLength string // Inference-Header-Content-Length, "" when absent
	body         []byte
}

// post sends an inference request body to Triton's HTTP endpoint.
func (p *tritonPair) post(t *testing.T, model string, body []byte, headerLength string) httpAnswer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+p.http+"/v2/models/"+model+"/infer", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if headerLength != "" {
		req.Header.Set("Inference-Header-Content-Length", headerLength)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return httpAnswer{resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Inference-Header-Content-Length"), b}
}

// viaGRPC converts an HTTP request body with ParseRequest, sends it to
// Triton's gRPC endpoint, and converts the answer with EncodeResponse.
func (p *tritonPair) viaGRPC(t *testing.T, model string, body []byte, headerLength string) (*Request, *tritonpb.ModelInferResponse, []byte, int, error) {
	t.Helper()
	req, err := ParseRequest(body, headerLength)
	if err != nil {
		t.Fatalf("ParseRequest of a body Triton takes: %v", err)
	}
	req.Proto.ModelName = model
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := p.grpc.RPC().ModelInfer(ctx, req.Proto)
	if err != nil {
		t.Fatalf("gRPC ModelInfer: %v", err)
	}
	out, hl, err := EncodeResponse(resp, req)
	return req, resp, out, hl, err
}

func headerValue(hl int) string {
	if hl < 0 {
		return ""
	}
	return strconv.Itoa(hl)
}

// sameAnswer checks that our HTTP answer (body, headerLength) is the one
// Triton's HTTP endpoint gave, byte for byte, with the same framing, and
// that both decode to the tensors of the gRPC answer.
func sameAnswer(t *testing.T, triton httpAnswer, grpcResp *tritonpb.ModelInferResponse, body []byte, headerLength int) {
	t.Helper()
	if triton.status != http.StatusOK {
		t.Fatalf("Triton answered %d: %s", triton.status, triton.body)
	}
	wantType := "application/json"
	if headerLength >= 0 {
		wantType = "application/octet-stream"
	}
	if triton.headerLength != headerValue(headerLength) || triton.contentType != wantType {
		t.Errorf("Triton's framing: Inference-Header-Content-Length %q, Content-Type %q; ours: %q, %s",
			triton.headerLength, triton.contentType, headerValue(headerLength), wantType)
	}
	if !bytes.Equal(body, triton.body) {
		t.Errorf("our answer\n%q\nTriton's\n%q", body, triton.body)
	}
	fromTriton, err := DecodeResponse(triton.body, triton.headerLength)
	if err != nil {
		t.Fatalf("DecodeResponse of Triton's answer: %v", err)
	}
	ours, err := DecodeResponse(body, headerValue(headerLength))
	if err != nil {
		t.Fatalf("DecodeResponse of our answer: %v", err)
	}
	if !proto.Equal(ours, fromTriton) {
		t.Errorf("our answer decodes to\n%s\nTriton's to\n%s", prototext.Format(ours), prototext.Format(fromTriton))
	}
	// The gRPC answer carries the same tensors (shared-memory outputs
	// aside, which have no data either way).
	for i, o := range grpcResp.GetOutputs() {
		d := fromTriton.Outputs[i]
		if o.Name != d.Name || o.Datatype != d.Datatype || fmt.Sprint(o.Shape) != fmt.Sprint(d.Shape) ||
			!bytes.Equal(grpcResp.RawOutputContents[i], fromTriton.RawOutputContents[i]) {
			t.Errorf("output %d: gRPC %v %x, HTTP %v %x", i, o, grpcResp.RawOutputContents[i], d, fromTriton.RawOutputContents[i])
		}
	}
}

func inferRequest(id string, outputs []string, ts ...triton.Tensor) *tritonpb.ModelInferRequest {
	req := &tritonpb.ModelInferRequest{Id: id}
	for _, t := range ts {
		req.Inputs = append(req.Inputs, &tritonpb.ModelInferRequest_InferInputTensor{Name: t.Name, Datatype: t.Datatype, Shape: t.Shape})
		req.RawInputContents = append(req.RawInputContents, t.Raw)
	}
	for _, o := range outputs {
		req.Outputs = append(req.Outputs, &tritonpb.ModelInferRequest_InferRequestedOutputTensor{Name: o})
	}
	return req
}

// TestTritonSameAnswers sends requests as JSON and as binary to Triton's
// HTTP endpoint, and through ParseRequest and gRPC, and checks that
// EncodeResponse gives Triton's HTTP answer byte for byte. The inputs are
// chosen so that every FP32 output has a short exact decimal form, which
// Triton (writing float32 values as doubles) and we write alike.
func TestTritonSameAnswers(t *testing.T) {
	p := newTritonPair(t)
	x := []float32{1, -2.5, 0.25, 1000, 3, 4, -5, 6}
	nanInf := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.Copysign(0, -1))}
	cases := []struct {
		name, model string
		req         *tritonpb.ModelInferRequest
		jsonToo     bool // FP16 and BF16 go as binary only
	}{
		{"affine_fp32", "affine_fp32", inferRequest("it-1", nil, triton.NewFP32("INPUT0", []int64{2, 4}, x)), true},
		{"affine_fp32 listed output", "affine_fp32", inferRequest("", []string{"OUTPUT0"}, triton.NewFP32("INPUT0", []int64{2, 4}, x)), true},
		{"affine_fp32 NaN and infinities", "affine_fp32", inferRequest("", nil, triton.NewFP32("INPUT0", []int64{1, 4}, nanInf)), true},
		{"affine_fp32 no rows", "affine_fp32", inferRequest("", nil, triton.NewFP32("INPUT0", []int64{0, 4}, nil)), true},
		{"affine_fp16", "affine_fp16", inferRequest("h", nil, triton.NewFP16("INPUT0", []int64{2, 4}, x)), false},
		{"identity_bf16", "identity_bf16", inferRequest("", []string{"OUTPUT0"}, triton.NewBF16("INPUT0", []int64{2, 4}, x)), false},
		{"runtime_info BYTES", "runtime_info", inferRequest("", nil, triton.NewStrings("NAME", []int64{3}, []string{"sys.version", "numpy", "no such \"module\"\t"})), true},
	}
	for _, c := range cases {
		var outputs [][][]byte // per form of the request: the gRPC answer's raw contents
		for _, binary := range []bool{true, false} {
			if !binary && !c.jsonToo {
				continue
			}
			t.Run(fmt.Sprintf("%s binary=%v", c.name, binary), func(t *testing.T) {
				body, hl, err := EncodeRequest(c.req, binary)
				if err != nil {
					t.Fatal(err)
				}
				answer := p.post(t, c.model, body, headerValue(hl))
				_, grpcResp, ours, ourHL, err := p.viaGRPC(t, c.model, body, headerValue(hl))
				if err != nil {
					t.Fatalf("EncodeResponse: %v", err)
				}
				sameAnswer(t, answer, grpcResp, ours, ourHL)
				outputs = append(outputs, grpcResp.RawOutputContents)
			})
		}
		// The request sent as JSON gives the outputs it gives as binary.
		if len(outputs) == 2 && !equalRaw(outputs[0], outputs[1]) {
			t.Errorf("%s: outputs %x as binary, %x as JSON", c.name, outputs[0], outputs[1])
		}
	}
}

// TestTritonOutputForm checks Triton's rule for the form of each output
// (WantsBinary) on the answers of both paths.
func TestTritonOutputForm(t *testing.T) {
	p := newTritonPair(t)
	in := `"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1,4],"data":[0.5,2,3,4]}]`
	for _, header := range []string{
		`{` + in + `}`,
		`{` + in + `,"parameters":{"binary_data_output":true}}`,
		`{` + in + `,"outputs":[{"name":"OUTPUT0"}],"parameters":{"binary_data_output":true}}`,
		`{` + in + `,"outputs":[{"name":"OUTPUT0","parameters":{"binary_data":false}}],"parameters":{"binary_data_output":true}}`,
		`{` + in + `,"outputs":[{"name":"OUTPUT0","parameters":{"binary_data":true}}],"parameters":{"binary_data_output":false}}`,
	} {
		t.Run(header, func(t *testing.T) {
			answer := p.post(t, "affine_fp32", []byte(header), "")
			req, grpcResp, ours, hl, err := p.viaGRPC(t, "affine_fp32", []byte(header), "")
			if err != nil {
				t.Fatal(err)
			}
			sameAnswer(t, answer, grpcResp, ours, hl)
			if binary := answer.headerLength != ""; req.WantsBinary("OUTPUT0") != binary {
				t.Errorf("WantsBinary = %v, Triton answered binary %v", !binary, binary)
			}
		})
	}
}

// TestTritonParameters checks that request parameters written in JSON
// reach a backend the same way over both paths: Triton's HTTP endpoint,
// and ParseRequest then gRPC. echo_parameters returns what its backend
// received, as JSON, which tells int64 from double parameters.
func TestTritonParameters(t *testing.T) {
	p := newTritonPair(t)
	body := []byte(`{"parameters":{"s":"str","b":true,"i":42,"neg":-7,"d":1.5,"d1":1.0,"e":1e2,` +
		`"big":9223372036854775808,"max":9223372036854775807,"headers":"h","esc":"a\"\\\u00e9",` +
		`"sequence_id":0,"priority":0,"timeout":0,"binary_data_output":false},` +
		`"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1,4],"data":[1,2,3,4],"parameters":{"custom":1}}],` +
		`"outputs":[{"name":"PARAMETERS","parameters":{"binary_data":false,"custom":2}}]}`)
	answer := p.post(t, "echo_parameters", body, "")
	if answer.status != http.StatusOK {
		t.Fatalf("Triton answered %d: %s", answer.status, answer.body)
	}
	viaHTTP, err := DecodeResponse(answer.body, answer.headerLength)
	if err != nil {
		t.Fatal(err)
	}
	_, grpcResp, ours, hl, err := p.viaGRPC(t, "echo_parameters", body, "")
	if err != nil {
		t.Fatal(err)
	}
	viaGRPC, err := DecodeResponse(ours, headerValue(hl))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(viaGRPC.RawOutputContents[0], grpcResp.RawOutputContents[0]) {
		t.Errorf("EncodeResponse changed PARAMETERS: %q, gRPC %q", viaGRPC.RawOutputContents[0], grpcResp.RawOutputContents[0])
	}
	// The backend sees the parameters in the body's order over HTTP, and
	// in no particular order over gRPC (a protobuf map): compare them as
	// JSON objects. Numbers keep their text, so that an int64 (42) and a
	// double (1.0) stay apart.
	decode := func(raw []byte) map[string]any {
		elems, err := triton.SplitBytes(raw)
		if err != nil || len(elems) != 1 {
			t.Fatalf("PARAMETERS %q, %v", raw, err)
		}
		var m map[string]any
		dec := json.NewDecoder(bytes.NewReader(elems[0]))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("PARAMETERS %s: %v", elems[0], err)
		}
		return m
	}
	fromHTTP, fromGRPC := decode(viaHTTP.RawOutputContents[0]), decode(viaGRPC.RawOutputContents[0])
	// Triton's own parameters (sequence_id, priority, timeout,
	// binary_data_output) are not passed on.
	want := map[string]string{"s": "str", "b": "true", "i": "42", "neg": "-7", "d": "1.5", "d1": "1.0", "e": "100.0",
		"big": "9223372036854776000.0", "max": "9223372036854775807", "headers": "h", "esc": "a\"\\é"}
	for path, got := range map[string]map[string]any{"HTTP": fromHTTP, "gRPC": fromGRPC} {
		if len(got) != len(want) {
			t.Errorf("over %s the backend got %v, want the keys of %v", path, got, want)
		}
		for k, v := range want {
			if fmt.Sprint(got[k]) != v {
				t.Errorf("over %s the backend got %s = %v, want %s", path, k, got[k], v)
			}
		}
	}
}

// TestTritonHalfAsJSON checks that an FP16 output asked for as JSON fails
// on both paths, with HTTP 400 from Triton.
func TestTritonHalfAsJSON(t *testing.T) {
	p := newTritonPair(t)
	h := `{"inputs":[{"name":"INPUT0","datatype":"FP16","shape":[1,4],"parameters":{"binary_data_size":8}}],"outputs":[{"name":"OUTPUT0","parameters":{"binary_data":false}}]}`
	body, hl := framed(h, triton.NewFP16("", nil, []float32{1, 2, 3, 4}).Raw)
	answer := p.post(t, "affine_fp16", body, hl)
	if answer.status != http.StatusBadRequest {
		t.Errorf("Triton answered %d %s, want 400", answer.status, answer.body)
	}
	_, _, _, _, err := p.viaGRPC(t, "affine_fp16", body, hl)
	var re *RequestError
	if !errors.As(err, &re) {
		t.Errorf("EncodeResponse: %v, want a *RequestError", err)
	}
}

// TestTritonRefusesToo sends malformed requests that ParseRequest refuses
// to Triton, and checks that Triton refuses them too (each is small enough
// not to crash it).
func TestTritonRefusesToo(t *testing.T) {
	p := newTritonPair(t)
	h := `{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1,4],"parameters":{"binary_data_size":16}}]}`
	lying := `{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1,4],"parameters":{"binary_data_size":12}}]}`
	for _, c := range []struct {
		name, body, headerLength string
	}{
		{"truncated binary", h + string(make([]byte, 10)), strconv.Itoa(len(h))},
		{"extra binary", h + string(make([]byte, 18)), strconv.Itoa(len(h))},
		{"lying binary_data_size", lying + string(make([]byte, 12)), strconv.Itoa(len(lying))},
		{"header length beyond body", h + string(make([]byte, 16)), strconv.Itoa(len(h) + 100)},
		{"junk", "\x17\x17\x17 junk, not JSON at all", "20"},
		{"too few elements", `{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1,4],"data":[1,2,3]}]}`, ""},
		{"string data", `{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1,4],"data":[1,2,3,"4"]}]}`, ""},
		{"duplicate input", `{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1,4],"data":[1,2,3,4]},{"name":"INPUT0","datatype":"FP32","shape":[1,4],"data":[1,2,3,4]}]}`, ""},
		{"no data", `{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1,4]}]}`, ""},
		{"triton_ parameter", `{"parameters":{"triton_x":1},"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1,4],"data":[1,2,3,4]}]}`, ""},
		{"null parameter", `{"parameters":{"x":null},"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1,4],"data":[1,2,3,4]}]}`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseRequest([]byte(c.body), c.headerLength)
			if err == nil {
				t.Fatal("ParseRequest accepts it")
			}
			a := p.post(t, "affine_fp32", []byte(c.body), c.headerLength)
			if a.status == http.StatusOK {
				t.Errorf("Triton accepts it: %s", a.body)
			}
			// Where we answer as Triton, the answer is Triton's.
			var te *TritonError
			if errors.As(err, &te) && (a.status != te.Status || !bytes.Equal(bytes.TrimSpace(a.body), ErrorBody(te.Msg))) {
				t.Errorf("Triton answered %d %s; we would answer %d %s", a.status, a.body, te.Status, ErrorBody(te.Msg))
			}
		})
	}
}

// TestTritonSharedMemory registers a system shared-memory region with
// Triton and sends a request whose input comes from it and whose output
// goes to it, over both paths.
func TestTritonSharedMemory(t *testing.T) {
	p := newTritonPair(t)
	name := fmt.Sprintf("tritonhttp_test_%d", os.Getpid())
	path := "/dev/shm/" + name
	if err := os.WriteFile(path, append(triton.NewFP32("", nil, []float32{1, 2, 3, 4}).Raw, make([]byte, 32)...), 0o600); err != nil {
		t.Skipf("no POSIX shared memory here: %v", err)
	}
	defer os.Remove(path)
	region := func(action string, body string) int {
		req, _ := http.NewRequest(http.MethodPost, "http://"+p.http+"/v2/systemsharedmemory/region/"+name+"/"+action, bytes.NewReader([]byte(body)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := region("register", `{"key":"/`+name+`","offset":0,"byte_size":48}`); st != http.StatusOK {
		t.Skipf("Triton does not share memory with this test (register answered %d)", st)
	}
	defer region("unregister", "")

	bodyAt := func(offset int) []byte {
		return []byte(`{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1,4],"parameters":{"shared_memory_region":"` + name + `","shared_memory_byte_size":16}}],` +
			`"outputs":[{"name":"OUTPUT0","parameters":{"shared_memory_region":"` + name + `","shared_memory_offset":` + strconv.Itoa(offset) + `,"shared_memory_byte_size":16}}]}`)
	}
	want := triton.NewFP32("", nil, []float32{3, 5, 7, 9}).Raw
	checkShm := func(offset int, written bool) {
		t.Helper()
		shm, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		w := want
		if !written {
			w = make([]byte, 16)
		}
		if !bytes.Equal(shm[offset:offset+16], w) {
			t.Errorf("shared memory at %d: %x, want %x", offset, shm[offset:offset+16], w)
		}
	}
	// Triton's HTTP endpoint writes its output at 16, the gRPC path at 32.
	answer := p.post(t, "affine_fp32", bodyAt(16), "")
	checkShm(16, true)
	checkShm(32, false)
	req, grpcResp, ours, hl, err := p.viaGRPC(t, "affine_fp32", bodyAt(32), "")
	if err != nil {
		t.Fatal(err)
	}
	checkShm(32, true)
	if len(req.Proto.RawInputContents) != 0 {
		t.Errorf("raw contents %x for an input in shared memory", req.Proto.RawInputContents)
	}
	sameAnswer(t, answer, grpcResp, ours, hl)
}

// TestSyntaxErrorsLikeTriton sends every header of tritonSyntaxAnswers to
// the real Triton: one that does not parse gets the 500 and the message
// ParseRequestWith gives, one that parses gets anything else.
func TestSyntaxErrorsLikeTriton(t *testing.T) {
	p := newTritonPair(t)
	for body, want := range tritonSyntaxAnswers {
		if body == "" {
			continue // an empty body is a raw request to Triton
		}
		got := p.post(t, "affine_fp32", []byte(body), "")
		_, err := ParseRequestWith(context.Background(), []byte(body), Options{})
		var te *TritonError
		if want == "" {
			if got.status == http.StatusInternalServerError && bytes.Contains(got.body, []byte("failed to parse")) {
				t.Errorf("%q: Triton cannot parse it: %s", body, got.body)
			}
			if errors.As(err, &te) {
				t.Errorf("%q: ParseRequestWith answers as a parse error: %v", body, err)
			}
			continue
		}
		if !errors.As(err, &te) {
			t.Errorf("%q: ParseRequestWith: %T %v, want a *TritonError", body, err, err)
			continue
		}
		if got.status != te.Status || !bytes.Equal(bytes.TrimSpace(got.body), ErrorBody(te.Msg)) {
			t.Errorf("%q: Triton answered %d %s; we would answer %d %s", body, got.status, got.body, te.Status, ErrorBody(te.Msg))
		}
	}
}

// TestHeaderLengthLikeTriton sends a valid request with header lengths
// that Triton reads with atoi: those within the body are served as the
// length they start with, those outside it refused with Triton's message.
func TestHeaderLengthLikeTriton(t *testing.T) {
	p := newTritonPair(t)
	h := `{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1,4],"parameters":{"binary_data_size":16}}]}`
	body := append([]byte(h), make([]byte, 16)...)
	n := strconv.Itoa(len(h))
	for _, v := range []string{n + "abc", "+" + n, " " + n, "-1", "99999999999999999999", strconv.Itoa(len(body) + 1)} {
		got := p.post(t, "affine_fp32", body, v)
		r, err := ParseRequestWith(context.Background(), body, Options{HeaderLength: v, HasHeaderLength: true})
		var te *TritonError
		switch {
		case err == nil && got.status == http.StatusOK:
			if len(r.Proto.GetInputs()) != 1 {
				t.Errorf("%q: parsed %d inputs", v, len(r.Proto.GetInputs()))
			}
		case errors.As(err, &te):
			if got.status != te.Status || !bytes.Equal(bytes.TrimSpace(got.body), ErrorBody(te.Msg)) {
				t.Errorf("%q: Triton answered %d %s; we would answer %d %s", v, got.status, got.body, te.Status, ErrorBody(te.Msg))
			}
		default:
			t.Errorf("%q: Triton answered %d %s; ParseRequestWith: %v", v, got.status, got.body, err)
		}
	}
}
