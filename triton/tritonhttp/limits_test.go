package tritonhttp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// manyTensors returns a request header with n FP32 inputs and n requested
// outputs, all with distinct names, each input with one element of JSON
// data.
func manyTensors(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"inputs":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"in%d","datatype":"FP32","shape":[1],"data":[%d]}`, i, i)
	}
	b.WriteString(`],"outputs":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"out%d"}`, i)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// cpuTime is the CPU time this process has used.
func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestParseRequestLinear parses 64k inputs and 64k outputs: the checks of
// unique input names and repeated outputs used to compare every pair (50k
// inputs took 7.8 s of CPU); in linear time this is milliseconds. The bound
// is CPU time, not wall time, so that a loaded machine does not fail it.
func TestParseRequestLinear(t *testing.T) {
	body := manyTensors(1 << 16)
	start := cpuTime(t)
	r, err := ParseRequest(body, "")
	took := cpuTime(t) - start
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Proto.Inputs) != 1<<16 || len(r.Proto.Outputs) != 1<<16 {
		t.Fatalf("%d inputs and %d outputs, want 65536 each", len(r.Proto.Inputs), len(r.Proto.Outputs))
	}
	if took > time.Second {
		t.Errorf("parsing 65536 inputs and outputs took %v of CPU, want well under a second", took)
	}
}

func TestParseRequestLimits(t *testing.T) {
	two := `{"inputs":[{"name":"a","datatype":"INT8","shape":[1],"data":[1]},{"name":"b","datatype":"INT8","shape":[1],"data":[1]}]`
	cases := []struct {
		name string
		body string
		lim  Limits
		want *LimitError // nil: accepted
	}{
		{"inputs at the limit", two + `}`, Limits{MaxInputs: 2}, nil},
		{"inputs over", two + `}`, Limits{MaxInputs: 1}, &LimitError{"inputs", 1}},
		{"outputs at the limit", two + `,"outputs":[{"name":"x"},{"name":"y"}]}`, Limits{MaxOutputs: 2}, nil},
		{"outputs over", two + `,"outputs":[{"name":"x"},{"name":"y"}]}`, Limits{MaxOutputs: 1}, &LimitError{"outputs", 1}},
		{"a repeated output counts", two + `,"outputs":[{"name":"x"},{"name":"x"}]}`, Limits{MaxOutputs: 1}, &LimitError{"outputs", 1}},
		{"request parameters at the limit", two + `,"parameters":{"p":1,"q":2}}`, Limits{MaxParameters: 2}, nil},
		{"request parameters over", two + `,"parameters":{"p":1,"q":2,"r":3}}`, Limits{MaxParameters: 2}, &LimitError{"parameters", 2}},
		{"input parameters over", `{"inputs":[{"name":"a","datatype":"INT8","shape":[1],"data":[1],"parameters":{"p":1,"q":2}}]}`,
			Limits{MaxParameters: 1}, &LimitError{"parameters", 1}},
		{"output parameters over", two + `,"outputs":[{"name":"x","parameters":{"binary_data":true,"q":2}}]}`,
			Limits{MaxParameters: 1}, &LimitError{"parameters", 1}},
		{"no limits", two + `,"outputs":[{"name":"x"},{"name":"y"}],"parameters":{"p":1,"q":2,"r":3}}`, Limits{}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseRequestWith(context.Background(), []byte(c.body), Options{Limits: c.lim})
			if c.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var le *LimitError
			if !errors.As(err, &le) || *le != *c.want {
				t.Fatalf("error %T %v, want %v", err, err, c.want)
			}
		})
	}
}

// TestParseRequestCancelled stops parsing once the context ends: the
// client went away and nobody waits for the answer.
func TestParseRequestCancelled(t *testing.T) {
	body := manyTensors(1 << 14)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := ParseRequestWith(ctx, body, Options{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	// A small request is done before the first look at the context.
	if _, err := ParseRequestWith(ctx, manyTensors(2), Options{}); err != nil {
		t.Fatalf("small request: %v", err)
	}
}

// TestHeaderLengthAsTriton reads Inference-Header-Content-Length as
// Triton does, with glibc's atoi: digits after optional white space and
// sign, up to the first other byte, clamped to long and truncated to int.
func TestHeaderLengthAsTriton(t *testing.T) {
	cases := map[string]int{
		"252": 252, "252abc": 252, " 99": 99, "\t\n99": 99, "+99": 99, "99 ": 99, "-1": -1, "-0": 0,
		"abc": 0, "": 0, "0x10": 0, "1e3": 1, "1.5": 1, "+": 0, "- 1": 0,
		"4294967296": 0, "4294967395": 99, "2147483648": -2147483648,
		"99999999999999999999": -1, "-99999999999999999999": 0, "00000000000000000000000007": 7,
	}
	for s, want := range cases {
		if got := atoi(s); got != want {
			t.Errorf("atoi(%q) = %d, want %d", s, got, want)
		}
	}
}

func TestParseRequestRaw(t *testing.T) {
	data := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	for _, c := range []struct {
		name       string
		body       []byte
		hl         string
		has, isRaw bool
	}{
		{"header length 0", data, "0", true, true},
		{"header length not a number", data, "abc", true, true},
		{"header length empty", data, "", true, true},
		{"empty body without header length", nil, "", false, true},
		{"4294967296 truncates to 0", data, "4294967296", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := ParseRequestWith(context.Background(), c.body, Options{HeaderLength: c.hl, HasHeaderLength: c.has})
			if err != nil {
				t.Fatal(err)
			}
			if r.Raw != c.isRaw || string(r.RawBody) != string(c.body) || !r.BinaryDataOutput || len(r.Proto.Inputs) != 0 {
				t.Fatalf("raw %v, body %v, binary output %v, %d inputs", r.Raw, r.RawBody, r.BinaryDataOutput, len(r.Proto.Inputs))
			}
		})
	}
}

// TestRepeatedOutput requests an output twice: Triton answers it once, as
// its first listing asks (seen on Triton 2.51, over HTTP and gRPC).
func TestRepeatedOutput(t *testing.T) {
	body := `{"inputs":[],"outputs":[{"name":"y","parameters":{"binary_data":true,"p":1}},{"name":"z"},{"name":"y"}]}`
	r, err := ParseRequest([]byte(body), "")
	if err != nil {
		t.Fatal(err)
	}
	outs := r.Proto.GetOutputs()
	if len(outs) != 2 || outs[0].GetName() != "y" || outs[1].GetName() != "z" || len(r.BinaryData) != 2 {
		t.Fatalf("outputs %v, binary %v; want y then z", outs, r.BinaryData)
	}
	if !r.BinaryData[0] || r.BinaryData[1] || outs[0].GetParameters()["p"].GetInt64Param() != 1 || !r.WantsBinary("y") {
		t.Fatalf("y does not keep its first listing's parameters: %v, binary %v", outs[0].GetParameters(), r.BinaryData)
	}
}

// TestSyntaxErrors are the answers the real Triton 2.51 gave to these
// bodies (HTTP 500, rapidjson's reason and offset); integration_test.go
// asks Triton again when one runs.
func TestSyntaxErrors(t *testing.T) {
	for body, want := range tritonSyntaxAnswers {
		te, _ := syntaxError([]byte(body))
		if want == "" {
			if te != nil {
				t.Errorf("%q: %v, want no error", body, te)
			}
			continue
		}
		if te == nil || te.Status != 500 || te.Msg != "failed to parse the request JSON buffer: "+want {
			t.Errorf("%q: %v, want 500 %q", body, te, want)
		}
	}
	// Nesting costs no stack.
	deep := strings.Repeat("[", 1<<20)
	if te, depth := syntaxError([]byte(deep)); depth != 1<<20 || te == nil || !strings.Contains(te.Msg, "Invalid value. at 1048576") {
		t.Errorf("a million open brackets: %v", te)
	}
}

// tritonSyntaxAnswers maps JSON headers to the reason and offset Triton
// 2.51 answered them with, "" for headers it parses.
var tritonSyntaxAnswers = map[string]string{
	"":                      "The document is empty. at 0",
	"   ":                   "The document is empty. at 3",
	"{":                     "Missing a name for object member. at 1",
	`{"inputs":[`:           "Invalid value. at 11",
	`{"inputs":[1,]}`:       "Invalid value. at 13",
	`{"a":1,}`:              "Missing a name for object member. at 7",
	`{"a" 1}`:               "Missing a colon after a name of object member. at 5",
	`{"a":1} x`:             "The document root must not be followed by other values. at 8",
	`[1 2]`:                 "Missing a comma or ']' after an array element. at 3",
	`{"a":"\x"}`:            "Invalid escape character in string. at 6",
	`{"a":tru}`:             "Invalid value. at 8",
	`{"a":1e}`:              "Miss exponent in number. at 7",
	`{"a":-}`:               "Invalid value. at 6",
	`{"a":"\ud800"}`:        "The surrogate pair in string is invalid. at 6",
	`{"a":01}`:              "Missing a comma or '}' after an object member. at 6",
	`{1:2}`:                 "Missing a name for object member. at 1",
	`{"a":[1,2}`:            "Missing a comma or ']' after an array element. at 9",
	`{"a":1.}`:              "Miss fraction part in number. at 7",
	`{"a":1e400}`:           "Number too big to be stored in double. at 5",
	`{"a":"\u12G4"}`:        "Incorrect hex digit after \\u escape in string. at 6",
	"{\"a\":\"x\x01\"}":     "Invalid escape character in string. at 7",
	"{\"a\":\"x\x00\"}":     "Missing a closing quotation mark in string. at 7",
	`{"a":NaN,"b":-Inf}`:    "",
	`{"a":[Infinity,-NaN]}`: "",
	`{"a":Infinit}`:         "Invalid value. at 12",
	"{\"a\":1}\x00junk":     "",
	"\x00{":                 "The document is empty. at 0",
	`{"a":"\ud83d\ude00"}`:  "",
	`{"a":"\udc00"}`:        "",
}
