package backendmode_test

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/sidecar/backendmode"
	"github.com/mergectl/react-triton/sidecar/internal/faketriton"
	"github.com/mergectl/react-triton/sidecar/internal/sidecartest"
	"github.com/mergectl/react-triton/triton/tritonhttp"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// repository answers ModelConfig from its configurations by name (a
// version asked for is recorded), NOT_FOUND for others, and err, when
// set, for every call.
type repository struct {
	tritonpb.GRPCInferenceServiceClient
	configs  map[string]*tritonpb.ModelConfig
	versions []string
	err      error
}

func (r *repository) ModelConfig(_ context.Context, in *tritonpb.ModelConfigRequest, _ ...grpc.CallOption) (*tritonpb.ModelConfigResponse, error) {
	if r.err != nil {
		return nil, r.err
	}
	r.versions = append(r.versions, in.GetName()+":"+in.GetVersion())
	cfg, ok := r.configs[in.GetName()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "Request for unknown model: '%s' is not found", in.GetName())
	}
	return &tritonpb.ModelConfigResponse{Config: cfg}, nil
}

// ensemble is an ensemble's configuration with one step per model named.
func ensemble(name string, steps ...string) *tritonpb.ModelConfig {
	sched := &tritonpb.ModelEnsembling{}
	for _, s := range steps {
		sched.Step = append(sched.Step, faketriton.Step(s, nil, nil))
	}
	return &tritonpb.ModelConfig{Name: name, Platform: "ensemble", SchedulingChoice: &tritonpb.ModelConfig_EnsembleScheduling{EnsembleScheduling: sched}}
}

// chain is a repository of n ensembles, e0 → e1 → … → e(n-1), the last
// with a react step.
func chain(n int) map[string]*tritonpb.ModelConfig {
	out := map[string]*tritonpb.ModelConfig{"react_zoo": {Name: "react_zoo", Backend: "react"}}
	for i := range n {
		next := "react_zoo"
		if i < n-1 {
			next = "e" + strconv.Itoa(i+1)
		}
		out["e"+strconv.Itoa(i)] = ensemble("e"+strconv.Itoa(i), next)
	}
	return out
}

// TestParameters: the parameters a request's headers make, by the model's
// configuration: a react model's and an ensemble's with a react step at
// any depth up to the bound get them; a model without one, one Triton does
// not know, a cycle and a request without the headers get none.
func TestParameters(t *testing.T) {
	configs := map[string]*tritonpb.ModelConfig{
		"react_zoo": {Name: "react_zoo", Backend: "react"},
		"backbone":  {Name: "backbone", Backend: "onnxruntime"},
		"fashion":   ensemble("fashion", "backbone", "react_zoo"),
		"outer":     ensemble("outer", "fashion"),
		"plain":     ensemble("plain", "backbone"),
		"missing":   ensemble("missing", "nosuch", "react_zoo"),
		"loop":      ensemble("loop", "loop2"),
		"loop2":     ensemble("loop2", "loop"),
	}
	maps.Copy(configs, chain(9)) // e0 is 8 ensembles above e8's react step
	pref := control.Values{Preference: "a=1", HasPreference: true}
	both := control.Values{Preference: "a=1", HasPreference: true, Preset: "p", HasPreset: true}
	for _, tt := range []struct {
		name, model string
		hdr         control.Values
		want        map[string]string
	}{
		{"react model", "react_zoo", pref, map[string]string{"react-preference": "a=1"}},
		{"both headers", "fashion", both, map[string]string{"react-preference": "a=1", "react-preset": "p"}},
		{"preset only", "fashion", control.Values{Preset: "p", HasPreset: true}, map[string]string{"react-preset": "p"}},
		{"nested", "outer", pref, map[string]string{"react-preference": "a=1"}},
		{"at the depth bound", "e1", pref, map[string]string{"react-preference": "a=1"}},
		{"past the depth bound", "e0", pref, nil},
		{"no react step", "plain", pref, nil},
		{"unknown model", "nosuch", pref, nil},
		{"unknown step", "missing", pref, nil},
		{"a cycle", "loop", pref, nil},
		{"no header", "fashion", control.Values{Key: "k", HasKey: true}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := backendmode.NewReaders(&repository{configs: configs})
			got, err := r.Parameters(context.Background(), tt.model, "", tt.hdr)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tt.want) || (got == nil) != (tt.want == nil) {
				t.Errorf("Parameters(%s) = %v, want %v", tt.model, got, tt.want)
			}
		})
	}
}

// TestParametersStepVersion: a step's version is the one asked about.
func TestParametersStepVersion(t *testing.T) {
	cfg := ensemble("fashion", "react_zoo")
	cfg.GetEnsembleScheduling().Step[0].ModelVersion = 3
	repo := &repository{configs: map[string]*tritonpb.ModelConfig{"fashion": cfg, "react_zoo": {Name: "react_zoo", Backend: "react"}}}
	r := backendmode.NewReaders(repo)
	if _, err := r.Parameters(context.Background(), "fashion", "2", control.Values{Preset: "p", HasPreset: true}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"fashion:2", "react_zoo:3"}; !equalStrings(repo.versions, want) {
		t.Errorf("asked for %v, want %v", repo.versions, want)
	}
}

func equalStrings(a, b []string) bool {
	return strings.Join(a, ",") == strings.Join(b, ",")
}

// TestParametersUnreachable: when Triton cannot say, the error is its
// status as it came, and nothing is cached.
func TestParametersUnreachable(t *testing.T) {
	away := status.Error(codes.Unavailable, "connection refused")
	repo := &repository{configs: map[string]*tritonpb.ModelConfig{"react_zoo": {Name: "react_zoo", Backend: "react"}}, err: away}
	r := backendmode.NewReaders(repo)
	hdr := control.Values{Preference: "a=1", HasPreference: true}
	if got, err := r.Parameters(context.Background(), "react_zoo", "", hdr); !errors.Is(err, away) || got != nil {
		t.Fatalf("Triton away: %v, %v; want its status", got, err)
	}
	repo.err = nil
	if got, err := r.Parameters(context.Background(), "react_zoo", "", hdr); err != nil || got[control.KeyPreference] != "a=1" {
		t.Errorf("Triton back: %v, %v", got, err)
	}
}

// TestSetGRPC: the parameters appended to a serialized request parse as
// its parameters, a header's replacing the request's own of the same key,
// the rest of the request as it was.
func TestSetGRPC(t *testing.T) {
	req := sidecartest.CtlRequest("fashion", "g", sidecartest.CtlBatch)
	req.Parameters = map[string]*tritonpb.InferParameter{
		"keep":             {ParameterChoice: &tritonpb.InferParameter_StringParam{StringParam: "y"}},
		"react-preference": {ParameterChoice: &tritonpb.InferParameter_StringParam{StringParam: "b=1"}},
	}
	payload, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	out := backendmode.SetGRPC(payload, map[string]string{"react-preference": "a=1", "react-preset": "p", "other": "x"})
	var got tritonpb.ModelInferRequest
	if err := proto.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	params := map[string]string{}
	for k, v := range got.GetParameters() {
		params[k] = v.GetStringParam()
	}
	if want := map[string]string{"keep": "y", "react-preference": "a=1", "react-preset": "p"}; !maps.Equal(params, want) {
		t.Errorf("parameters %v, want %v", params, want)
	}
	got.Parameters, req.Parameters = nil, nil
	if !proto.Equal(&got, req) {
		t.Errorf("the rest of the request changed: %v", &got)
	}
	if string(out[:len(payload)]) != string(payload) {
		t.Error("the request's own bytes were not kept")
	}
}

// TestSetHTTP: an HTTP request's body gets the parameters in its JSON
// header, its Inference-Header-Content-Length and Content-Encoding
// updated; a raw binary request is refused.
func TestSetHTTP(t *testing.T) {
	for _, binary := range []bool{false, true} {
		body, hdr := sidecartest.InferBody(t, sidecartest.CtlRequest("fashion", "h", sidecartest.CtlBatch), binary)
		h := http.Header{"Content-Encoding": {"gzip"}}
		for k, v := range hdr {
			h.Set(k, v)
		}
		out, err := backendmode.SetHTTP("fashion", h, body, false, map[string]string{"react-preset": "p"})
		if err != nil {
			t.Fatal(err)
		}
		if h.Get("Content-Encoding") != "" {
			t.Errorf("binary %v: Content-Encoding kept", binary)
		}
		hl, framed := h["Inference-Header-Content-Length"]
		if framed != binary {
			t.Errorf("binary %v: Inference-Header-Content-Length %v", binary, hl)
		}
		opt := tritonhttp.Options{HasHeaderLength: framed}
		if framed {
			opt.HeaderLength = hl[0]
		}
		req, err := tritonhttp.ParseRequestWith(context.Background(), out, opt)
		if err != nil {
			t.Fatalf("binary %v: %v", binary, err)
		}
		if got := req.Proto.GetParameters()["react-preset"].GetStringParam(); got != "p" {
			t.Errorf("binary %v: react-preset %q", binary, got)
		}
		if n := len(req.Proto.GetInputs()); n != 1 {
			t.Errorf("binary %v: %d inputs", binary, n)
		}
	}
	_, err := backendmode.SetHTTP("fashion", http.Header{}, make([]byte, 12), true, map[string]string{"react-preset": "p"})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "raw binary request") {
		t.Errorf("raw binary: %v, want INVALID_ARGUMENT saying why", err)
	}
}

// TestHeaderValues: the first value of each of ReACT's headers, whatever
// its case; none when absent.
func TestHeaderValues(t *testing.T) {
	h := http.Header{}
	h.Add("React-Preference", "a=1")
	h.Add("React-Preference", "b=1")
	if got := backendmode.HeaderValues(h); !got.HasPreference || got.Preference != "a=1" || got.HasPreset {
		t.Errorf("got %+v", got)
	}
	h = http.Header{}
	h.Set("react-preset", "")
	if got := backendmode.HeaderValues(h); got.HasPreference || !got.HasPreset || got.Preset != "" {
		t.Errorf("an empty preset header: %+v", got)
	}
}
