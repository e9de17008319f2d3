package pipeline_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/internal/testutil"
	"github.com/mergectl/react-triton/sidecar/internal/faketriton"
	"github.com/mergectl/react-triton/sidecar/pipeline"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// preferenceCase is one way a request chooses its preference, and what
// must be applied.
type preferenceCase struct {
	name   string
	header control.Values
	params map[string]string
	// want are the rounded weights over a, b, c; nil: no correction.
	want      []float64
	canonical string
	source    control.Source
}

var preferenceCases = []preferenceCase{
	{name: "default", want: weights(1, 0, 0), canonical: "a=1", source: control.SourceDefault},
	{name: "header", header: control.Values{Preference: "a=1,b=1,c=1", HasPreference: true},
		want: weights(0.333334, 0.333333, 0.333333), canonical: "a=0.333334,b=0.333333,c=0.333333", source: control.SourceHeader},
	{name: "parameter", params: map[string]string{"react-preference": " b = 3 , c=1"},
		want: weights(0, 0.75, 0.25), canonical: "b=0.75,c=0.25", source: control.SourceParameter},
	{name: "preset header", header: control.Values{Preset: "b_first", HasPreset: true},
		want: weights(0.2, 0.8, 0), canonical: "a=0.2,b=0.8", source: control.SourcePreset},
	{name: "preset parameter", params: map[string]string{"react-preset": "even"},
		want: weights(0.333334, 0.333333, 0.333333), canonical: "a=0.333334,b=0.333333,c=0.333333", source: control.SourcePreset},
	{name: "header none", header: control.Values{Preference: "none", HasPreference: true}, canonical: "none", source: control.SourceHeader},
	{name: "parameter none", params: map[string]string{"react-preference": "none"}, canonical: "none", source: control.SourceParameter},
	{name: "header beats parameter", header: control.Values{Preference: "c=1", HasPreference: true},
		params: map[string]string{"react-preference": "a=1"}, want: weights(0, 0, 1), canonical: "c=1", source: control.SourceHeader},
	{name: "parameter beats presets", header: control.Values{Preset: "even", HasPreset: true},
		params: map[string]string{"react-preference": "b=1", "react-preset": "b_first"}, want: weights(0, 1, 0), canonical: "b=1", source: control.SourceParameter},
	{name: "header preset beats parameter preset", header: control.Values{Preset: "b_first", HasPreset: true},
		params: map[string]string{"react-preset": "even"}, want: weights(0.2, 0.8, 0), canonical: "a=0.2,b=0.8", source: control.SourcePreset},
	{name: "header none beats preset", header: control.Values{Preference: " none ", HasPreference: true, Preset: "even", HasPreset: true},
		canonical: "none", source: control.SourceHeader},
}

// TestInferNumerics serves the multi model (three heads) for every
// combination of the feature's and the heads' datatypes and every way to
// choose a preference, and checks what each head received and what the
// client got against the float64 reference.
func TestInferNumerics(t *testing.T) {
	dts := []string{"FP32", "FP16", "BF16"}
	for _, featureDT := range dts {
		for _, headDT := range dts {
			t.Run(featureDT+"_feature_"+headDT+"_heads", func(t *testing.T) {
				sc := faketriton.NewScenario(7, 4, tasks...)
				e := newEnv(t, scenarioModels(sc, featureDT, headDT)...)
				set := e.mustBuild(t, e.config())
				m := set.Models["multi"]
				headDT := map[string]string{"a": "FP32", "b": headDT, "c": headDT}
				for _, pc := range preferenceCases {
					req := inferRequest("multi", batch)
					req.Parameters = map[string]*tritonpb.InferParameter{}
					for k, v := range pc.params {
						req.Parameters[k] = stringParam(v)
					}
					res, err := m.Infer(context.Background(), e.up, pipeline.Request{Proto: req, Header: pc.header})
					if err != nil {
						t.Fatalf("%s: Infer: %v", pc.name, err)
					}
					if got := res.Response.GetParameters()["react-preference"].GetStringParam(); got != pc.canonical {
						t.Errorf("%s: react-preference = %q, want %q", pc.name, got, pc.canonical)
					}
					if res.Choice.Source != pc.source || res.Choice.Canonical() != pc.canonical || res.Rows != 5 {
						t.Errorf("%s: choice %+v, rows %d; want source %v, %q, 5 rows", pc.name, res.Choice, res.Rows, pc.source, pc.canonical)
					}
					var w [][]float64
					if pc.want != nil {
						w = e.sc.Reference(pc.want, e.sc.Beta, false)
					}
					backboneOut := e.fake.LastResponse("backbone").GetRawOutputContents()[0]
					resp := res.Response
					if names := outputNames(resp); !slices.Equal(names, []string{"logits_a", "logits_b", "logits_c"}) {
						t.Fatalf("%s: outputs %v", pc.name, names)
					}
					for i, task := range tasks {
						head := "head_" + task
						ex := e.expect(task, featureDT, headDT[task], w, batch)
						in := e.fake.LastRequest(head)
						if in.GetInputs()[0].GetDatatype() != headDT[task] || !slices.Equal(in.GetInputs()[0].GetShape(), []int64{5, 4}) {
							t.Errorf("%s: %s received %s %v", pc.name, head, in.GetInputs()[0].GetDatatype(), in.GetInputs()[0].GetShape())
						}
						got, err := faketriton.Decode(headDT[task], in.GetRawInputContents()[0])
						if err != nil {
							t.Fatal(err)
						}
						if j := within(got, ex.feature, ex.featureTol); j >= 0 {
							t.Errorf("%s: %s received feature %v, want %v ± %v (first bad element %d)", pc.name, head, got, ex.feature, ex.featureTol, j)
						}
						if w == nil && headDT[task] == featureDT && !bytes.Equal(in.GetRawInputContents()[0], backboneOut) {
							t.Errorf("%s: %s did not receive the backbone's bytes unchanged", pc.name, head)
						}
						out := resp.GetOutputs()[i]
						if out.GetDatatype() != "FP32" || !slices.Equal(out.GetShape(), []int64{5, faketriton.HeadRows}) {
							t.Errorf("%s: output %s is %s %v", pc.name, out.GetName(), out.GetDatatype(), out.GetShape())
						}
						logits, err := faketriton.Decode("FP32", resp.GetRawOutputContents()[i])
						if err != nil {
							t.Fatal(err)
						}
						if j := within(logits, ex.logits, ex.logitsTol); j >= 0 {
							t.Errorf("%s: %s logits %v, want %v ± %v (first bad element %d)", pc.name, out.GetName(), logits, ex.logits, ex.logitsTol, j)
						}
						// The tolerance must tell a correction from none.
						if w != nil {
							if none := e.expect(task, featureDT, headDT[task], nil, batch); within(none.logits, ex.logits, ex.logitsTol) < 0 {
								t.Fatalf("%s: the tolerance %v cannot tell W_p from no correction", pc.name, ex.logitsTol)
							}
						}
					}
				}
			})
		}
	}
}

// TestInferOverrides: β and the normalisation of the configuration
// override the file's.
func TestInferOverrides(t *testing.T) {
	e := newEnv(t)
	cfg := e.config()
	beta := 0.5
	cfg.Components[0].Beta = &beta
	cfg.Components[0].Normalize = "mean"
	m := e.mustBuild(t, cfg).Models["single"]
	res, err := m.Infer(context.Background(), e.up, pipeline.Request{Proto: inferRequest("single", batch),
		Header: control.Values{Preference: "a=1,c=3", HasPreference: true}})
	if err != nil {
		t.Fatal(err)
	}
	w := e.sc.Reference(weights(0.25, 0, 0.75), beta, true)
	ex := e.expect("a", "FP32", "FP32", w, batch)
	logits, _ := faketriton.Decode("FP32", res.Response.GetRawOutputContents()[0])
	if j := within(logits, ex.logits, ex.logitsTol); j >= 0 {
		t.Errorf("logits %v, want %v (β=0.5, mean)", logits, ex.logits)
	}
	// The file's own β and normalisation give another answer.
	other := e.expect("a", "FP32", "FP32", e.sc.Reference(weights(0.25, 0, 0.75), e.sc.Beta, false), batch)
	if within(other.logits, ex.logits, ex.logitsTol) < 0 {
		t.Fatal("the overrides make no difference in this scenario: the test proves nothing")
	}
}

func outputNames(resp *tritonpb.ModelInferResponse) []string {
	var names []string
	for _, o := range resp.GetOutputs() {
		names = append(names, o.GetName())
	}
	return names
}

// TestInferFanOut: requested outputs decide which heads are called, and the
// response follows the request's order.
func TestInferFanOut(t *testing.T) {
	e := newEnv(t)
	m := e.mustBuild(t, e.config()).Models["multi"]
	tests := []struct {
		outputs []string
		calls   map[string]int // head → calls
	}{
		{nil, map[string]int{"head_a": 1, "head_b": 1, "head_c": 1}},
		{[]string{"logits_c", "logits_a"}, map[string]int{"head_a": 1, "head_b": 0, "head_c": 1}},
		{[]string{"logits_b"}, map[string]int{"head_a": 0, "head_b": 1, "head_c": 0}},
		{[]string{"logits_b", "logits_c", "logits_a"}, map[string]int{"head_a": 1, "head_b": 1, "head_c": 1}},
	}
	w := e.sc.Reference(weights(1, 0, 0), e.sc.Beta, false)
	for _, tt := range tests {
		before := map[string]int{}
		for h := range tt.calls {
			before[h] = e.fake.Calls(h)
		}
		res, err := m.Infer(context.Background(), e.up, pipeline.Request{Proto: inferRequest("multi", batch, tt.outputs...)})
		if err != nil {
			t.Fatalf("%v: %v", tt.outputs, err)
		}
		want := tt.outputs
		if want == nil {
			want = []string{"logits_a", "logits_b", "logits_c"}
		}
		if got := outputNames(res.Response); !slices.Equal(got, want) {
			t.Errorf("%v: outputs %v", tt.outputs, got)
		}
		for h, n := range tt.calls {
			if got := e.fake.Calls(h) - before[h]; got != n {
				t.Errorf("%v: %s called %d times, want %d", tt.outputs, h, got, n)
			}
		}
		// Each output is its own head's.
		for i, name := range want {
			task := strings.TrimPrefix(name, "logits_")
			ex := e.expect(task, "FP32", "FP32", w, batch)
			logits, _ := faketriton.Decode("FP32", res.Response.GetRawOutputContents()[i])
			if j := within(logits, ex.logits, ex.logitsTol); j >= 0 {
				t.Errorf("%v: %s = %v, want %v", tt.outputs, name, logits, ex.logits)
			}
		}
	}
}

// TestInferForwardsIDAndParameters: the request id and the parameters
// other than ReACT's reach the backbone and the heads; ReACT's never do.
func TestInferForwardsIDAndParameters(t *testing.T) {
	e := newEnv(t)
	m := e.mustBuild(t, e.config()).Models["multi"]
	req := inferRequest("multi", batch)
	req.Id = "the-id-42"
	req.Parameters = map[string]*tritonpb.InferParameter{
		"priority":         {ParameterChoice: &tritonpb.InferParameter_Int64Param{Int64Param: 2}},
		"custom":           stringParam("kept"),
		"react-preference": stringParam("b=1"),
		"react-preset":     stringParam("even"),
		"react-arm":        stringParam("x"),
		"React-Other":      stringParam("y"),
		"REACT-PREFERENCE": stringParam("c=1"),
	}
	res, err := m.Infer(context.Background(), e.up, pipeline.Request{Proto: req})
	if err != nil {
		t.Fatal(err)
	}
	if res.Response.GetId() != "the-id-42" || res.Response.GetModelName() != "multi" || res.Response.GetModelVersion() != "1" {
		t.Errorf("response id %q, model %q version %q", res.Response.GetId(), res.Response.GetModelName(), res.Response.GetModelVersion())
	}
	if res.Choice.Canonical() != "b=1" {
		t.Errorf("applied %q, want the react-preference parameter b=1", res.Choice.Canonical())
	}
	for _, model := range []string{"backbone", "head_a", "head_b", "head_c"} {
		got := e.fake.LastRequest(model)
		if got.GetId() != "the-id-42" {
			t.Errorf("%s: id %q", model, got.GetId())
		}
		var keys []string
		for k := range got.GetParameters() {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, []string{"custom", "priority"}) {
			t.Errorf("%s received parameters %v, want custom and priority only", model, keys)
		}
		if got.GetParameters()["priority"].GetInt64Param() != 2 || got.GetParameters()["custom"].GetStringParam() != "kept" {
			t.Errorf("%s: parameters %v", model, got.GetParameters())
		}
	}
	// The client's request is not modified.
	if len(req.GetParameters()) != 7 {
		t.Errorf("Infer modified the request's parameters: %v", req.GetParameters())
	}
}

// TestInferRequestErrors: what the client got wrong is INVALID_ARGUMENT (or
// NOT_FOUND for a version), names the model, and nothing reaches Triton.
func TestInferRequestErrors(t *testing.T) {
	e := newEnv(t)
	m := e.mustBuild(t, e.config()).Models["multi"]
	valid := func() *tritonpb.ModelInferRequest { return inferRequest("multi", batch[:6]) }
	tests := []struct {
		name   string
		edit   func(*tritonpb.ModelInferRequest)
		header control.Values
		code   codes.Code
		msg    []string
	}{
		{name: "bad preference header", header: control.Values{Preference: "a=x", HasPreference: true}, code: codes.InvalidArgument,
			msg: []string{`"multi"`, "react-preference header", "valid tasks: a, b, c", "presets: b_first, even"}},
		{name: "unknown task", header: control.Values{Preference: "d=1", HasPreference: true}, code: codes.InvalidArgument,
			msg: []string{`unknown task "d" (known: a, b, c) (presets: b_first, even)`}}, // the tasks listed once
		{name: "empty preference", header: control.Values{Preference: "", HasPreference: true}, code: codes.InvalidArgument},
		{name: "zero weights", edit: func(r *tritonpb.ModelInferRequest) {
			r.Parameters = map[string]*tritonpb.InferParameter{"react-preference": stringParam("a=0,b=0")}
		}, code: codes.InvalidArgument, msg: []string{"react-preference parameter"}},
		{name: "unknown preset", header: control.Values{Preset: "nope", HasPreset: true}, code: codes.InvalidArgument,
			msg: []string{`unknown preset "nope"`, "presets: b_first, even"}},
		{name: "preference too long", header: control.Values{Preference: "a=1" + strings.Repeat(" ", 80), HasPreference: true}, code: codes.InvalidArgument,
			msg: []string{"limit of 64"}},
		{name: "non-string preference parameter", edit: func(r *tritonpb.ModelInferRequest) {
			r.Parameters = map[string]*tritonpb.InferParameter{"react-preference": {ParameterChoice: &tritonpb.InferParameter_Int64Param{Int64Param: 1}}}
		}, code: codes.InvalidArgument, msg: []string{`"react-preference" must be a string`}},
		{name: "non-string preset parameter", edit: func(r *tritonpb.ModelInferRequest) {
			r.Parameters = map[string]*tritonpb.InferParameter{"react-preset": {ParameterChoice: &tritonpb.InferParameter_BoolParam{BoolParam: true}}}
		}, code: codes.InvalidArgument, msg: []string{`"react-preset" must be a string`}},
		{name: "unknown input", edit: func(r *tritonpb.ModelInferRequest) { r.Inputs[0].Name = "y" }, code: codes.InvalidArgument,
			msg: []string{`unknown input "y"`}},
		{name: "missing input", edit: func(r *tritonpb.ModelInferRequest) { r.Inputs, r.RawInputContents = nil, nil }, code: codes.InvalidArgument,
			msg: []string{`missing input "x"`}},
		{name: "input twice", edit: func(r *tritonpb.ModelInferRequest) {
			r.Inputs = append(r.Inputs, r.Inputs[0])
			r.RawInputContents = append(r.RawInputContents, r.RawInputContents[0])
		}, code: codes.InvalidArgument, msg: []string{"more than once"}},
		{name: "wrong datatype", edit: func(r *tritonpb.ModelInferRequest) {
			r.Inputs[0].Datatype = "FP64"
			r.RawInputContents[0] = append(r.RawInputContents[0], r.RawInputContents[0]...)
		}, code: codes.InvalidArgument, msg: []string{"FP64"}},
		{name: "wrong shape", edit: func(r *tritonpb.ModelInferRequest) { r.Inputs[0].Shape = []int64{3, 2} }, code: codes.InvalidArgument,
			msg: []string{"shape [3 2]"}},
		{name: "rank", edit: func(r *tritonpb.ModelInferRequest) { r.Inputs[0].Shape = []int64{6} }, code: codes.InvalidArgument},
		{name: "negative dimension", edit: func(r *tritonpb.ModelInferRequest) { r.Inputs[0].Shape = []int64{-2, 3} }, code: codes.InvalidArgument},
		{name: "batch above max", edit: func(r *tritonpb.ModelInferRequest) {
			x := make([]float64, 9*3)
			*r = *inferRequest("multi", x)
		}, code: codes.InvalidArgument, msg: []string{"batch size 9", "maximum of 8"}},
		{name: "batch 0", edit: func(r *tritonpb.ModelInferRequest) {
			r.Inputs[0].Shape = []int64{0, 3}
			r.RawInputContents[0] = nil
		}, code: codes.InvalidArgument},
		{name: "raw size mismatch", edit: func(r *tritonpb.ModelInferRequest) { r.RawInputContents[0] = r.RawInputContents[0][:23] },
			code: codes.InvalidArgument, msg: []string{"23 bytes"}},
		{name: "raw too long", edit: func(r *tritonpb.ModelInferRequest) { r.RawInputContents[0] = append(r.RawInputContents[0], 0, 0, 0, 0) },
			code: codes.InvalidArgument},
		{name: "raw contents count", edit: func(r *tritonpb.ModelInferRequest) {
			r.RawInputContents = append(r.RawInputContents, []byte{1, 2, 3, 4})
		}, code: codes.InvalidArgument, msg: []string{"2 raw input contents for 1 inputs"}},
		{name: "unknown output", edit: func(r *tritonpb.ModelInferRequest) {
			r.Outputs = []*tritonpb.ModelInferRequest_InferRequestedOutputTensor{{Name: "logits"}}
		}, code: codes.InvalidArgument, msg: []string{`unknown output "logits"`, "logits_a, logits_b, logits_c"}},
		{name: "output twice", edit: func(r *tritonpb.ModelInferRequest) {
			r.Outputs = []*tritonpb.ModelInferRequest_InferRequestedOutputTensor{{Name: "logits_a"}, {Name: "logits_a"}}
		}, code: codes.InvalidArgument, msg: []string{"more than once"}},
		{name: "version 2", edit: func(r *tritonpb.ModelInferRequest) { r.ModelVersion = "2" }, code: codes.NotFound,
			msg: []string{`"multi" has no version 2`}},
		{name: "version 1", edit: func(r *tritonpb.ModelInferRequest) { r.ModelVersion = "1" }, code: codes.OK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := valid()
			if tt.edit != nil {
				tt.edit(req)
			}
			before := e.fake.TotalCalls()
			_, err := m.Infer(context.Background(), e.up, pipeline.Request{Proto: req, Header: tt.header})
			st := status.Convert(err)
			if st.Code() != tt.code {
				t.Fatalf("code %v (%v), want %v", st.Code(), err, tt.code)
			}
			for _, s := range tt.msg {
				if !strings.Contains(st.Message(), s) {
					t.Errorf("message %q does not contain %q", st.Message(), s)
				}
			}
			if calls := e.fake.TotalCalls() - before; tt.code != codes.OK && calls != 0 {
				t.Errorf("%d calls reached Triton for a request refused with %v", calls, tt.code)
			}
		})
	}
}

// TestInferUpstreamErrors: a failed Triton call gives the client Triton's
// code, with the model called named; UNAVAILABLE names Triton's address.
func TestInferUpstreamErrors(t *testing.T) {
	tests := []struct {
		name  string
		setup func(e *env) (cleanup func())
		code  codes.Code
		msg   []string
	}{
		{name: "backbone invalid argument", setup: func(e *env) func() {
			e.fake.Fail("backbone", status.Error(codes.InvalidArgument, "unexpected shape of x"))
			return func() { e.fake.Fail("backbone", nil) }
		}, code: codes.InvalidArgument, msg: []string{`"multi"`, `backbone model "backbone"`, "unexpected shape of x"}},
		{name: "head resource exhausted", setup: func(e *env) func() {
			e.fake.Fail("head_b", status.Error(codes.ResourceExhausted, "out of memory"))
			return func() { e.fake.Fail("head_b", nil) }
		}, code: codes.ResourceExhausted, msg: []string{`head model "head_b"`, "out of memory"}},
		{name: "backbone not ready", setup: func(e *env) func() {
			e.fake.SetReady("backbone", false)
			return func() { e.fake.SetReady("backbone", true) }
		}, code: codes.Unavailable, msg: []string{"upstream Triton", "not ready"}},
		{name: "head unloaded", setup: func(e *env) func() {
			e.fake.SetMissing("head_c", true)
			return func() { e.fake.SetMissing("head_c", false) }
		}, code: codes.NotFound, msg: []string{`head model "head_c"`}},
	}
	e := newEnv(t)
	m := e.mustBuild(t, e.config()).Models["multi"]
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer tt.setup(e)()
			_, err := m.Infer(context.Background(), e.up, pipeline.Request{Proto: inferRequest("multi", batch)})
			st := status.Convert(err)
			if st.Code() != tt.code {
				t.Fatalf("code %v (%v), want %v", st.Code(), err, tt.code)
			}
			for _, s := range tt.msg {
				if !strings.Contains(st.Message(), s) {
					t.Errorf("message %q does not contain %q", st.Message(), s)
				}
			}
			if tt.code == codes.Unavailable && !strings.Contains(st.Message(), e.up.Addr) {
				t.Errorf("UNAVAILABLE message %q does not name Triton's address %s", st.Message(), e.up.Addr)
			}
		})
	}

	t.Run("unreachable", func(t *testing.T) {
		addr := e.fake.Addr
		dead := upstream(t, testutil.ClosedAddr(t))
		_, err := m.Infer(context.Background(), dead, pipeline.Request{Proto: inferRequest("multi", batch)})
		st := status.Convert(err)
		if st.Code() != codes.Unavailable || !strings.Contains(st.Message(), dead.Addr) || strings.Contains(st.Message(), addr) {
			t.Errorf("unreachable Triton: %v; want UNAVAILABLE naming %s", err, dead.Addr)
		}
	})
}

// TestInferContext: a cancelled request or one past its deadline stops,
// with the context's code, and calls no head.
func TestInferContext(t *testing.T) {
	e := newEnv(t)
	m := e.mustBuild(t, e.config()).Models["multi"]
	heads := func() int { return e.fake.Calls("head_a") + e.fake.Calls("head_b") + e.fake.Calls("head_c") }

	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		before := heads()
		_, err := m.Infer(ctx, e.up, pipeline.Request{Proto: inferRequest("multi", batch)})
		if status.Code(err) != codes.Canceled {
			t.Errorf("cancelled: %v, want CANCELLED", err)
		}
		if heads() != before {
			t.Error("a head was called for a cancelled request")
		}
	})
	t.Run("cancelled with a new preference", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := m.Infer(ctx, e.up, pipeline.Request{Proto: inferRequest("multi", batch),
			Header: control.Values{Preference: "a=0.123,b=0.877", HasPreference: true}})
		if c := status.Code(err); c != codes.Canceled {
			t.Errorf("cancelled: %v, want CANCELLED", err)
		}
	})
	t.Run("deadline in the backbone", func(t *testing.T) {
		release := e.fake.Hold("backbone")
		defer release()
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		before := heads()
		_, err := m.Infer(ctx, e.up, pipeline.Request{Proto: inferRequest("multi", batch)})
		if status.Code(err) != codes.DeadlineExceeded {
			t.Errorf("deadline: %v, want DEADLINE_EXCEEDED", err)
		}
		if heads() != before {
			t.Error("a head was called after the backbone's deadline")
		}
	})
	t.Run("upstream timeout", func(t *testing.T) {
		release := e.fake.Hold("head_a")
		defer release()
		up := *e.up
		up.Timeout = 100 * time.Millisecond
		_, err := m.Infer(context.Background(), &up, pipeline.Request{Proto: inferRequest("multi", batch)})
		if status.Code(err) != codes.DeadlineExceeded {
			t.Errorf("upstream timeout: %v, want DEADLINE_EXCEEDED", err)
		}
	})
}

// TestInferConcurrent runs many requests with different preferences at
// once (go test -race): each gets its own answer.
func TestInferConcurrent(t *testing.T) {
	e := newEnv(t)
	m := e.mustBuild(t, e.config()).Models["single"]
	type job struct {
		spec string
		w    []float64
	}
	jobs := []job{
		{"a=1", weights(1, 0, 0)}, {"b=1", weights(0, 1, 0)}, {"c=1", weights(0, 0, 1)},
		{"a=1,b=3", weights(0.25, 0.75, 0)}, {"none", nil}, {"a=1,b=1,c=2", weights(0.25, 0.25, 0.5)},
	}
	errs := make(chan error, 8*len(jobs))
	for i := 0; i < 8*len(jobs); i++ {
		j := jobs[i%len(jobs)]
		go func() {
			x := batch[3*(i%3):]
			res, err := m.Infer(context.Background(), e.up, pipeline.Request{Proto: inferRequest("single", x),
				Header: control.Values{Preference: j.spec, HasPreference: true}})
			if err != nil {
				errs <- err
				return
			}
			var w [][]float64
			if j.w != nil {
				w = e.sc.Reference(j.w, e.sc.Beta, false)
			}
			ex := e.expect("a", "FP32", "FP32", w, x)
			logits, _ := faketriton.Decode("FP32", res.Response.GetRawOutputContents()[0])
			if k := within(logits, ex.logits, ex.logitsTol); k >= 0 {
				errs <- fmt.Errorf("%s: logits %v, want %v", j.spec, logits, ex.logits)
				return
			}
			errs <- nil
		}()
	}
	for i := 0; i < 8*len(jobs); i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
