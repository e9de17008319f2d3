package tritonhttp

import (
	"errors"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/mergectl/react-triton/triton"
)

// heapAllocated returns the bytes allocated on the heap so far.
func heapAllocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// FuzzParseRequest checks that ParseRequest never panics, allocates at
// most a constant factor of the body's size (whatever the shapes claim),
// refuses with *RequestError only, and that whatever it accepts is
// consistent: every input not in shared memory has raw contents that
// match its shape and datatype, the HTTP-only parameters are gone, and
// the request encodes back to a body that parses to the same message.
//
// Seeds are in testdata/fuzz/FuzzParseRequest: junk behind a short
// Inference-Header-Content-Length (the body that crashes Triton 2.51,
// scaled down), truncated binary data, a lying binary_data_size, deeply
// nested JSON, shapes far larger than their data, and valid requests.
func FuzzParseRequest(f *testing.F) {
	h := `{"inputs":[{"name":"x","datatype":"FP32","shape":[1,4],"parameters":{"binary_data_size":16}}]}`
	f.Add([]byte(h+strings.Repeat("\x00", 16)), strconv.Itoa(len(h)))
	f.Add([]byte(`{"inputs":[{"name":"s","datatype":"BYTES","shape":[2],"data":[["a"],"b"]}],"outputs":[{"name":"o"}]}`), "")
	f.Fuzz(func(t *testing.T, body []byte, headerLength string) {
		before := heapAllocated()
		r, err := ParseRequest(body, headerLength)
		if got, limit := heapAllocated()-before, 64*uint64(len(body))+1<<20; got > limit {
			t.Fatalf("allocated %d bytes for a %d-byte body", got, len(body))
		}
		if err != nil {
			var re *RequestError
			if !errors.As(err, &re) {
				t.Fatalf("error %T %v is not a *RequestError", err, err)
			}
			return
		}
		checkConsistent(t, r)

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
