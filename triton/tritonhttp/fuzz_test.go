package tritonhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/tritonhttp/internal/jsontext"
	"github.com/mergectl/react-triton/triton/tritonhttp/internal/rapidjson"
)

// heapAllocated returns the bytes allocated on the heap so far.
func heapAllocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// FuzzParseRequest checks that ParseRequestWith never panics, allocates
// at most a constant factor of the body's size (whatever the shapes
// claim), refuses with *RequestError, *TritonError or *LimitError only,
// and that whatever it accepts is consistent: every input not in shared
// memory has raw contents that match its shape and datatype, the
// HTTP-only parameters are gone, the counts are within the limits, and
// the request encodes back to a body that parses to the same message. A
// *LimitError must be true: parsed without limits, the body either fails
// for another reason or has more of what the limit counts. A raw request
// (header length 0) keeps the whole body as its data.
//
// The limits are drawn from the body's length, so that the corpus keeps
// its two arguments and every seed runs under several.
//
// Seeds are in testdata/fuzz/FuzzParseRequest: junk behind a short
// Inference-Header-Content-Length (the body that crashes Triton 2.51,
// scaled down), truncated binary data, a lying binary_data_size, deeply
// nested JSON, shapes far larger than their data, and valid requests.
func FuzzParseRequest(f *testing.F) {
	h := `{"inputs":[{"name":"x","datatype":"FP32","shape":[1,4],"parameters":{"binary_data_size":16}}]}`
	f.Add([]byte(h+strings.Repeat("\x00", 16)), strconv.Itoa(len(h)))
	f.Add([]byte(`{"inputs":[{"name":"s","datatype":"BYTES","shape":[2],"data":[["a"],"b"]}],"outputs":[{"name":"o"}]}`), "")
	f.Add([]byte(`{"inputs":[{"name":"a","datatype":"INT8","shape":[1],"data":[1]},{"name":"b","datatype":"INT8","shape":[1],"data":[2]}],`+
		`"outputs":[{"name":"o"},{"name":"p"},{"name":"o"}],"parameters":{"k":1,"l":"v","m":true}}`), "")
	f.Fuzz(func(t *testing.T, body []byte, headerLength string) {
		lim := Limits{MaxInputs: 1 + len(body)%3, MaxOutputs: 1 + len(body)/3%3, MaxParameters: 1 + len(body)/9%3}
		opt := Options{HeaderLength: headerLength, HasHeaderLength: headerLength != "", Limits: lim}
		before := heapAllocated()
		r, err := ParseRequestWith(context.Background(), body, opt)
		if got, limit := heapAllocated()-before, 64*uint64(len(body))+1<<20; got > limit {
			t.Fatalf("allocated %d bytes for a %d-byte body", got, len(body))
		}
		if err != nil {
			var re *RequestError
			var te *TritonError
			var le *LimitError
			switch {
			case errors.As(err, &le):
				checkLimit(t, body, opt, le)
			case errors.As(err, &te):
				if te.Status != 400 && te.Status != 500 {
					t.Fatalf("Triton's status %d for %v", te.Status, te)
				}
			case !errors.As(err, &re):
				t.Fatalf("error %T %v is not a *RequestError, *TritonError or *LimitError", err, err)
			}
			return
		}
		if r.Raw {
			if len(r.Proto.Inputs) != 0 || !bytes.Equal(r.RawBody, body) || !r.BinaryDataOutput {
				t.Fatalf("raw request: %d inputs, body kept %v, binary output %v", len(r.Proto.Inputs), bytes.Equal(r.RawBody, body), r.BinaryDataOutput)
			}
			return
		}
		checkConsistent(t, r)
		checkCounts(t, r, lim)

		enc, hl, err := EncodeRequest(r.Proto, true)
		if err != nil {
			t.Fatalf("EncodeRequest of an accepted request: %v\n%s", err, prototext.Format(r.Proto))
		}
		hlv := ""
		if hl >= 0 {
			hlv = strconv.Itoa(hl)
		}
		back, err := ParseRequest(enc, hlv)
		if err != nil {
			t.Fatalf("re-encoded request does not parse: %v\n%q", err, enc)
		}
		if !proto.Equal(back.Proto, r.Proto) {
			t.Fatalf("re-encoded request parses to\n%s\nnot\n%s", prototext.Format(back.Proto), prototext.Format(r.Proto))
		}
	})
}

// checkCounts checks an accepted request's inputs, outputs and parameters
// against the limits.
func checkCounts(t *testing.T, r *Request, lim Limits) {
	t.Helper()
	pb := r.Proto
	if len(pb.Inputs) > lim.MaxInputs || len(pb.Outputs) > lim.MaxOutputs || len(pb.Parameters) > lim.MaxParameters {
		t.Fatalf("accepted %d inputs, %d outputs, %d parameters under %+v", len(pb.Inputs), len(pb.Outputs), len(pb.Parameters), lim)
	}
	for _, in := range pb.Inputs {
		if len(in.Parameters) > lim.MaxParameters {
			t.Fatalf("input %q: accepted %d parameters under %+v", in.Name, len(in.Parameters), lim)
		}
	}
	for _, o := range pb.Outputs {
		if len(o.Parameters) > lim.MaxParameters {
			t.Fatalf("output %q: accepted %d parameters under %+v", o.Name, len(o.Parameters), lim)
		}
	}
}

// checkLimit checks that a *LimitError is deserved: parsed without limits,
// the body fails for another reason, or has more of what le counts than
// its limit.
func checkLimit(t *testing.T, body []byte, opt Options, le *LimitError) {
	t.Helper()
	opt.Limits = Limits{}
	r, err := ParseRequestWith(context.Background(), body, opt)
	if err != nil || r.Raw {
		return
	}
	// The request parses without limits: the count must exceed. Parameters
	// count what the JSON lists, before the HTTP-only ones are removed.
	n := 0
	switch le.What {
	case "inputs":
		n = len(r.Proto.Inputs)
	case "outputs":
		n = len(r.Proto.Outputs)
		if n <= le.Limit && bytes.Count(body, []byte(`"name"`)) > le.Limit {
			return // duplicates listed count, and are dropped after
		}
	case "parameters":
		n = strings.Count(string(body), ":") // an upper bound of members in any one object
	default:
		t.Fatalf("limit on %q", le.What)
	}
	if n <= le.Limit {
		t.Fatalf("%v, but without limits %d %s", le, n, le.What)
	}
}

// checkConsistent checks an accepted request against its own shapes, with
// the triton package's helpers.
func checkConsistent(t *testing.T, r *Request) {
	t.Helper()
	pb := r.Proto
	if len(r.BinaryData) != len(pb.Outputs) {
		t.Fatalf("%d binary_data flags for %d outputs", len(r.BinaryData), len(pb.Outputs))
	}
	for k := range pb.Parameters {
		if k == "binary_data_output" || strings.HasPrefix(k, "triton_") {
			t.Fatalf("request parameter %q kept", k)
		}
	}
	names := map[string]bool{}
	j := 0
	for i, in := range pb.Inputs {
		if names[in.Name] {
			t.Fatalf("input %q twice", in.Name)
		}
		names[in.Name] = true
		if _, ok := in.Parameters["binary_data_size"]; ok {
			t.Fatalf("input %q keeps binary_data_size", in.Name)
		}
		raw, ok := r.RawInput(i)
		if _, shm := in.Parameters["shared_memory_region"]; shm {
			if ok {
				t.Fatalf("input %q in shared memory has raw contents", in.Name)
			}
			continue
		}
		if !ok || j >= len(pb.RawInputContents) {
			t.Fatalf("input %q has no raw contents", in.Name)
		}
		j++
		n, err := triton.NumElements(in.Shape)
		if err != nil {
			t.Fatalf("input %q: accepted shape: %v", in.Name, err)
		}
		if size, fixed := triton.ElementSize(in.Datatype); fixed {
			if int64(len(raw)) != n*int64(size) {
				t.Fatalf("input %q: %d bytes for shape %v of %s", in.Name, len(raw), in.Shape, in.Datatype)
			}
			continue
		}
		if in.Datatype != triton.BYTES {
			t.Fatalf("input %q: accepted datatype %q", in.Name, in.Datatype)
		}
		elems, err := triton.SplitBytes(raw)
		if err != nil || int64(len(elems)) != n {
			t.Fatalf("input %q: %d BYTES elements (%v) for shape %v", in.Name, len(elems), err, in.Shape)
		}
	}
	if j != len(pb.RawInputContents) {
		t.Fatalf("%d raw contents for %d inputs with data", len(pb.RawInputContents), j)
	}
	outs := map[string]bool{}
	for _, o := range pb.Outputs {
		if outs[o.Name] {
			t.Fatalf("output %q twice", o.Name)
		}
		outs[o.Name] = true
		if _, ok := o.Parameters["binary_data"]; ok {
			t.Fatalf("output %q keeps binary_data", o.Name)
		}
	}
}

// FuzzSyntaxError holds the rapidjson check to an independent parser: on
// bodies without the tokens where rapidjson and encoding/json differ on
// purpose (NaN and Inf, escapes, NUL), both accept or both refuse. An
// accepted body is also what the scanner of ParseRequest skips without a
// syntax error.
func FuzzSyntaxError(f *testing.F) {
	for body := range tritonSyntaxAnswers {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		te, _ := syntaxError(body)
		if te != nil && te.Status != 500 {
			t.Fatalf("status %d", te.Status)
		}
		if bytes.ContainsAny(body, "NI\\\x00") || (te != nil && strings.Contains(te.Msg, rapidjson.MsgNumberTooBig)) {
			return // encoding/json checks syntax only: 1e400 is valid to it
		}
		if valid := json.Valid(body); valid != (te == nil) {
			t.Fatalf("%q: encoding/json says valid %v, the rapidjson check %v", body, valid, te)
		}
		if te == nil && len(bytes.TrimSpace(body)) > 0 {
			s := jsontext.New(body)
			err := s.SkipValue()
			if err == nil {
				err = s.End()
			}
			if err != nil && !s.TooDeep() {
				t.Fatalf("%q: valid JSON, but the scanner says %v", body, err)
			}
		}
	})
}
