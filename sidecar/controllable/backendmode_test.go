package controllable_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/internal/faketriton"
	"github.com/mergectl/react-triton/sidecar/internal/sidecartest"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// backendModels are a backend-mode repository: a react model, an ensemble
// with a react step (backbone → react_zoo → head_a), an ensemble holding
// that one, and an ensemble without a react step. Each ensemble answers
// with an empty response; the tests read what reached it.
func backendModels() []*faketriton.Model {
	x := []faketriton.Tensor{{Name: "x", Datatype: "FP32", Shape: []int64{-1, 3}}}
	feature := []faketriton.Tensor{{Name: "feature", Datatype: "FP32", Shape: []int64{-1, 4}}}
	logits := []faketriton.Tensor{{Name: "logits", Datatype: "FP32", Shape: []int64{-1, 2}}}
	empty := func(*tritonpb.ModelInferRequest) (*tritonpb.ModelInferResponse, error) {
		return &tritonpb.ModelInferResponse{}, nil
	}
	return []*faketriton.Model{
		{Name: "react_zoo", MaxBatchSize: 8, Backend: "react", Inputs: feature, Outputs: feature, Infer: empty},
		{Name: "fashion_react", MaxBatchSize: 8, Inputs: x, Outputs: logits, Infer: empty, Steps: []*tritonpb.ModelEnsembling_Step{
			faketriton.Step("backbone", map[string]string{"x": "x"}, map[string]string{"feature": "feature"}),
			faketriton.Step("react_zoo", map[string]string{"feature": "feature"}, map[string]string{"feature": "corrected"}),
			faketriton.Step("head_a", map[string]string{"feature": "corrected"}, map[string]string{"logits": "logits"}),
		}},
		{Name: "outer", MaxBatchSize: 8, Inputs: x, Outputs: logits, Infer: empty, Steps: []*tritonpb.ModelEnsembling_Step{
			faketriton.Step("fashion_react", map[string]string{"x": "x"}, map[string]string{"logits": "logits"}),
		}},
		{Name: "plain", MaxBatchSize: 8, Inputs: x, Outputs: logits, Infer: empty, Steps: []*tritonpb.ModelEnsembling_Step{
			faketriton.Step("backbone", map[string]string{"x": "x"}, map[string]string{"feature": "feature"}),
			faketriton.Step("head_a", map[string]string{"feature": "feature"}, map[string]string{"logits": "logits"}),
		}},
	}
}

// startBackendHarness is a harness whose fake also serves backendModels.
func startBackendHarness(t *testing.T) *sidecartest.Harness {
	t.Helper()
	h := sidecartest.NewHarness(t, nil)
	for _, m := range backendModels() {
		h.Fake.Put(m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := h.Models.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return h
}

// ownParams returns the react-* parameters of a request, as strings.
func ownParams(req *tritonpb.ModelInferRequest) map[string]string {
	out := map[string]string{}
	for k, v := range req.GetParameters() {
		if control.IsOwnKey(k) {
			out[k] = v.GetStringParam()
		}
	}
	return out
}

func sameParams(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestBackendModeHeaders: a react-preference or react-preset header sent
// through the sidecar to a model that reads ReACT's parameters (a react
// model, an ensemble with a react step, at any depth) reaches it as the
// request parameter, over gRPC, a gRPC stream and HTTP (JSON, binary,
// gzip), with the sidecar's precedence; to a model without a react step it
// is dropped, as before; no react-* header reaches Triton.
func TestBackendModeHeaders(t *testing.T) {
	h := startBackendHarness(t)
	tests := []struct {
		name    string
		model   string
		headers map[string]string
		params  map[string]string // the request's own react-* parameters
		want    map[string]string // the react-* parameters Triton receives
	}{
		{"preference", "fashion_react", map[string]string{"react-preference": "a=1"}, nil, map[string]string{"react-preference": "a=1"}},
		{"preset", "fashion_react", map[string]string{"react-preset": "p"}, nil, map[string]string{"react-preset": "p"}},
		{"header beats parameter", "fashion_react", map[string]string{"react-preference": "a=1"}, map[string]string{"react-preference": "b=1"},
			map[string]string{"react-preference": "a=1"}},
		{"parameter beats preset header", "fashion_react", map[string]string{"react-preset": "p"}, map[string]string{"react-preference": "b=1"},
			map[string]string{"react-preference": "b=1", "react-preset": "p"}},
		{"preset header beats preset parameter", "fashion_react", map[string]string{"react-preset": "p"}, map[string]string{"react-preset": "q"},
			map[string]string{"react-preset": "p"}},
		{"the react model itself", "react_zoo", map[string]string{"react-preference": "a=1"}, nil, map[string]string{"react-preference": "a=1"}},
		{"a nested ensemble", "outer", map[string]string{"react-preference": "a=1"}, nil, map[string]string{"react-preference": "a=1"}},
		{"no react step", "plain", map[string]string{"react-preference": "a=1"}, map[string]string{"react-preset": "q"}, map[string]string{"react-preset": "q"}},
		{"no header", "fashion_react", nil, map[string]string{"react-preset": "q"}, map[string]string{"react-preset": "q"}},
	}
	request := func(model string, params map[string]string) *tritonpb.ModelInferRequest {
		req := sidecartest.CtlRequest(model, "b", sidecartest.CtlBatch)
		if model == "react_zoo" {
			req = sidecartest.HeadRequest(model, "b", sidecartest.CtlBatch[:4])
		}
		req.Parameters = map[string]*tritonpb.InferParameter{"keep": {ParameterChoice: &tritonpb.InferParameter_StringParam{StringParam: "y"}}}
		for k, v := range params {
			req.Parameters[k] = &tritonpb.InferParameter{ParameterChoice: &tritonpb.InferParameter_StringParam{StringParam: v}}
		}
		return req
	}
	check := func(t *testing.T, how, model string, want map[string]string) {
		t.Helper()
		got := h.Fake.LastRequest(model)
		if !sameParams(ownParams(got), want) || got.GetParameters()["keep"].GetStringParam() != "y" {
			t.Errorf("%s: %s received parameters %v, want %v and keep", how, model, got.GetParameters(), want)
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// gRPC.
			ctx := context.Background()
			for k, v := range tt.headers {
				ctx = metadata.AppendToOutgoingContext(ctx, k, v)
			}
			if _, err := h.Client.ModelInfer(ctx, request(tt.model, tt.params)); err != nil {
				t.Fatal(err)
			}
			check(t, "gRPC", tt.model, tt.want)
			for k := range h.Fake.LastMetadata(tt.model) {
				if control.IsOwnKey(k) {
					t.Errorf("metadata %q reached Triton", k)
				}
			}
			// A stream.
			stream, err := h.Client.ModelStreamInfer(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := stream.Send(request(tt.model, tt.params)); err != nil {
				t.Fatal(err)
			}
			if resp, err := stream.Recv(); err != nil || resp.GetErrorMessage() != "" {
				t.Fatalf("stream: %v %v", resp, err)
			}
			stream.CloseSend()
			check(t, "stream", tt.model, tt.want)
			// HTTP, JSON, binary and gzip-compressed.
			for _, form := range []string{"json", "binary", "gzip"} {
				body, hdr := sidecartest.InferBody(t, request(tt.model, tt.params), form != "json")
				if form == "gzip" {
					var gz bytes.Buffer
					zw := gzip.NewWriter(&gz)
					zw.Write(body)
					zw.Close()
					body, hdr["Content-Encoding"] = gz.Bytes(), "gzip"
				}
				for k, v := range tt.headers {
					hdr[strings.ToUpper(k[:1])+k[1:]] = v
				}
				resp, out := sidecartest.HTTPDo(t, http.MethodPost, h.HTTPURL+"/v2/models/"+tt.model+"/infer", body, hdr)
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("HTTP %s: %d %s", form, resp.StatusCode, out)
				}
				check(t, "HTTP "+form, tt.model, tt.want)
				for k := range h.Fake.LastHTTPHeader() {
					if control.IsOwnKey(k) {
						t.Errorf("HTTP %s: header %q reached Triton", form, k)
					}
				}
			}
		})
	}
}

// TestBackendModeUnknownAndUnreachable: a header sent to a model Triton
// does not know passes on (Triton answers NOT_FOUND); when Triton cannot
// say whether a model reads the header, the request is refused rather than
// relayed without its preference.
func TestBackendModeUnknownAndUnreachable(t *testing.T) {
	h := startBackendHarness(t)
	ctx := metadata.AppendToOutgoingContext(context.Background(), "react-preference", "a=1")
	if _, err := h.Client.ModelInfer(ctx, sidecartest.CtlRequest("nosuch", "u", sidecartest.CtlBatch)); status.Code(err) != codes.NotFound ||
		!strings.Contains(err.Error(), "Request for unknown model") {
		t.Errorf("unknown model: %v, want Triton's NOT_FOUND", err)
	}
	h.Fake.Stop()
	_, err := h.Client.ModelInfer(ctx, sidecartest.CtlRequest("outer", "u", sidecartest.CtlBatch))
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "cannot tell whether it reads the react-preference") {
		t.Errorf("Triton away: %v", err)
	}
	body, hdr := sidecartest.InferBody(t, sidecartest.CtlRequest("outer", "u", sidecartest.CtlBatch), false)
	hdr["React-Preset"] = "p"
	resp, out := sidecartest.HTTPDo(t, http.MethodPost, h.HTTPURL+"/v2/models/outer/infer", body, hdr)
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(out), "cannot tell") {
		t.Errorf("HTTP, Triton away: %d %s", resp.StatusCode, out)
	}
}

// TestReloadForgetsReaders: a reload forgets what the sidecar learnt about
// which models read ReACT's parameters, so that a model replaced together
// with the configuration is asked about again at once, not after the
// readers' 10 seconds: plain, learnt to have no react step, gets one, and
// the first request after the reload has its header as a parameter.
func TestReloadForgetsReaders(t *testing.T) {
	h := startBackendHarness(t)
	ctx := metadata.AppendToOutgoingContext(context.Background(), "react-preference", "a=1")
	send := func() map[string]string {
		t.Helper()
		if _, err := h.Client.ModelInfer(ctx, sidecartest.CtlRequest("plain", "r", sidecartest.CtlBatch)); err != nil {
			t.Fatal(err)
		}
		return ownParams(h.Fake.LastRequest("plain"))
	}
	if got := send(); len(got) != 0 {
		t.Fatalf("plain, without a react step, received %v", got)
	}
	for _, m := range backendModels() {
		if m.Name == "outer" { // an ensemble holding fashion_react, as plain now
			m.Name = "plain"
			h.Fake.Put(m)
		}
	}
	cfg, err := config.Load(h.ConfigPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Models.Reload(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if got, want := send(), map[string]string{"react-preference": "a=1"}; !sameParams(got, want) {
		t.Errorf("after a reload, plain (now with a react step) received %v, want %v", got, want)
	}
}

// TestBackendModeRawBinary: a raw binary HTTP request (Inference-Header-
// Content-Length: 0, the body the only input's data) has no JSON header
// to carry request parameters, so one with a react header to a model that
// reads them is refused (400, saying why) rather than relayed
// uncorrected; without the header it passes on.
func TestBackendModeRawBinary(t *testing.T) {
	h := startBackendHarness(t)
	body := make([]byte, 4*3) // one row of x, FP32 [1, 3]
	hdr := map[string]string{"Content-Type": "application/octet-stream", "Inference-Header-Content-Length": "0", "React-Preference": "a=1"}
	before := h.Fake.Calls("fashion_react")
	resp, out := sidecartest.HTTPDo(t, http.MethodPost, h.HTTPURL+"/v2/models/fashion_react/infer", body, hdr)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(out), "raw binary request") {
		t.Errorf("raw binary with react-preference: %d %s, want 400 saying why", resp.StatusCode, out)
	}
	if n := h.Fake.Calls("fashion_react") - before; n != 0 {
		t.Errorf("Triton called %d times for a refused request", n)
	}
	delete(hdr, "React-Preference")
	resp, out = sidecartest.HTTPDo(t, http.MethodPost, h.HTTPURL+"/v2/models/fashion_react/infer", body, hdr)
	if resp.StatusCode == http.StatusBadRequest && strings.Contains(string(out), "raw binary request") {
		t.Errorf("raw binary without a react header refused: %d %s", resp.StatusCode, out)
	}
}
