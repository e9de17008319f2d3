package controllable_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	grpccodes "google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/sidecar/internal/faketriton"
	"github.com/mergectl/react-triton/sidecar/internal/restapi"
	"github.com/mergectl/react-triton/sidecar/internal/sidecartest"
	"github.com/mergectl/react-triton/sidecar/limits"
	"github.com/mergectl/react-triton/triton/tritonhttp"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// rejected reads react_rejected_requests_total for a protocol and reason.
func rejected(t *testing.T, h *sidecartest.Harness, protocol, reason string) float64 {
	t.Helper()
	v, _ := sidecartest.MetricValue(sidecartest.Scrape(t, h.Metrics.Handler()), "react_rejected_requests_total", map[string]string{"protocol": protocol, "reason": reason})
	return v
}

// overLimits returns requests for model over each of the harness's limits
// (8 inputs, outputs, and parameters per object), by reason.
func overLimits(model string) map[string]*tritonpb.ModelInferRequest {
	many := func() *tritonpb.ModelInferRequest {
		return sidecartest.CtlRequest(model, "lim", sidecartest.CtlBatch[:3])
	}
	inputs := many()
	for i := range 8 {
		inputs.Inputs = append(inputs.Inputs, &tritonpb.ModelInferRequest_InferInputTensor{Name: fmt.Sprint("in", i), Datatype: "FP32", Shape: []int64{1, 3}})
		inputs.RawInputContents = append(inputs.RawInputContents, faketriton.Encode("FP32", sidecartest.CtlBatch[:3]))
	}
	outputs := many()
	for i := range 9 {
		outputs.Outputs = append(outputs.Outputs, &tritonpb.ModelInferRequest_InferRequestedOutputTensor{Name: fmt.Sprint("out", i)})
	}
	params := many()
	params.Parameters = map[string]*tritonpb.InferParameter{}
	for i := range 9 {
		params.Parameters[fmt.Sprint("p", i)] = &tritonpb.InferParameter{ParameterChoice: &tritonpb.InferParameter_Int64Param{Int64Param: 1}}
	}
	inputParams := many()
	inputParams.Inputs[0].Parameters = params.Parameters
	outputParams := many()
	outputParams.Outputs = []*tritonpb.ModelInferRequest_InferRequestedOutputTensor{{Name: "logits", Parameters: params.Parameters}}
	return map[string]*tritonpb.ModelInferRequest{
		"too_many_inputs": inputs, "too_many_outputs": outputs, "too_many_parameters": params,
		"input parameters": inputParams, "output parameters": outputParams,
	}
}

// TestLimitsGRPC: a ModelInfer over a limit on inputs, outputs or the
// parameters of one object is refused with RESOURCE_EXHAUSTED, for a
// controllable model and for one passed through alike, counted, and never
// reaches Triton.
func TestLimitsGRPC(t *testing.T) {
	h := sidecartest.StartHarness(t, nil)
	for _, model := range []string{"single", "head_a"} {
		for name, req := range overLimits(model) {
			t.Run(model+"/"+name, func(t *testing.T) {
				reason := name
				if !strings.HasPrefix(reason, "too_many") {
					reason = "too_many_parameters"
				}
				before, calls := rejected(t, h, "grpc", reason), h.Fake.TotalCalls()
				_, err := h.Client.ModelInfer(context.Background(), req)
				st := status.Convert(err)
				what := strings.TrimPrefix(reason, "too_many_")
				if st.Code() != grpccodes.ResourceExhausted || !strings.Contains(st.Message(), "limits.max_"+what) {
					t.Fatalf("%v, want RESOURCE_EXHAUSTED naming limits.max_%s", err, what)
				}
				if rejected(t, h, "grpc", reason) != before+1 || h.Fake.TotalCalls() != calls {
					t.Error("not counted once, or reached Triton")
				}
			})
		}
	}
	// At the limits, served.
	req := sidecartest.CtlRequest("single", "ok", sidecartest.CtlBatch)
	req.Parameters = map[string]*tritonpb.InferParameter{}
	for i := range 8 {
		req.Parameters[fmt.Sprint("p", i)] = &tritonpb.InferParameter{ParameterChoice: &tritonpb.InferParameter_StringParam{StringParam: "v"}}
	}
	if _, err := h.Client.ModelInfer(context.Background(), req); err != nil {
		t.Errorf("8 parameters: %v", err)
	}
}

// TestLimitsHTTPControllable: the same limits over HTTP, for a controllable
// model: 413, counted (the pass-through cases are in
// TestModelsHTTPMalformed).
func TestLimitsHTTP(t *testing.T) {
	h := sidecartest.StartHarness(t, nil)
	for name, req := range overLimits("") {
		t.Run(name, func(t *testing.T) {
			reason := name
			if !strings.HasPrefix(reason, "too_many") {
				reason = "too_many_parameters"
			}
			body, hdr := sidecartest.InferBody(t, req, true)
			before := rejected(t, h, "http", reason)
			resp, out := sidecartest.HTTPDo(t, http.MethodPost, h.HTTPURL+"/v2/models/single/infer", body, hdr)
			if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(out), "limits.max_") {
				t.Fatalf("%d %s, want 413 naming the limit", resp.StatusCode, out)
			}
			if rejected(t, h, "http", reason) != before+1 {
				t.Error("not counted")
			}
		})
	}
}

// TestLimitsStream: in a stream, a request over a limit is answered with an
// error_message and the stream goes on, for both kinds of models.
func TestLimitsStream(t *testing.T) {
	h := sidecartest.StartHarness(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := h.Client.ModelStreamInfer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	send := []*tritonpb.ModelInferRequest{
		overLimits("single")["too_many_inputs"], sidecartest.CtlRequest("single", "ok1", sidecartest.CtlBatch),
		overLimits("head_a")["too_many_outputs"], sidecartest.HeadRequest("head_a", "ok2", []float64{1, 2, 3, 4}),
	}
	for _, r := range send {
		if err := stream.Send(r); err != nil {
			t.Fatal(err)
		}
	}
	stream.CloseSend()
	var errs, ok []string
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if m := resp.GetErrorMessage(); m != "" {
			errs = append(errs, m)
		} else {
			ok = append(ok, resp.GetInferResponse().GetId())
		}
	}
	if len(errs) != 2 || len(ok) != 2 || !strings.Contains(errs[0]+errs[1], "limits.max_inputs") || !strings.Contains(errs[0]+errs[1], "limits.max_outputs") {
		t.Errorf("errors %q, answers %q; want the two over the limits refused and the two others answered", errs, ok)
	}
}

// TestBudgetHTTP: with limits.max_inflight_bytes held by other requests, a
// request is answered 429 with Retry-After; a body larger than the whole
// budget 413; a small one still fits the eighth kept for small requests.
func TestBudgetHTTP(t *testing.T) {
	h := sidecartest.StartHarness(t, func(c *sidecartest.CtlConfig) {
		c.Limits = "  max_inflight_bytes: 64KiB\n  max_inputs: 8\n  max_outputs: 8\n  max_parameters: 8\n"
		c.Admission = "  retry_after: 2500ms\n"
	})
	body, hdr := sidecartest.InferBody(t, sidecartest.CtlRequest("", "b", sidecartest.CtlBatch), true)
	hold, err := h.Models.Budget().Reserve(64<<10 - 100)
	if err != nil {
		t.Fatal(err)
	}
	// A body of less than a 64th of the budget fits the eighth kept for
	// small ones.
	for _, model := range []string{"single", "head_a"} {
		b := body
		if model == "head_a" {
			b, hdr = sidecartest.InferBody(t, sidecartest.HeadRequest("", "h", []float64{1, 2, 3, 4}), true)
		}
		resp, out := sidecartest.HTTPDo(t, http.MethodPost, h.HTTPURL+"/v2/models/"+model+"/infer", b, hdr)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: a small request with the budget held: %d %s", model, resp.StatusCode, out)
		}
	}
	// A larger one does not.
	big := []byte(`{"inputs":[{"name":"x","datatype":"FP32","shape":[1,3],"data":[1,2,3]}]}` + strings.Repeat(" ", 4<<10))
	before := rejected(t, h, "http", "memory")
	resp, out := sidecartest.HTTPDo(t, http.MethodPost, h.HTTPURL+"/v2/models/single/infer", big, nil)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "3" || !strings.Contains(string(out), "limits.max_inflight_bytes") {
		t.Errorf("with the budget held: %d, Retry-After %q, %s; want 429, 3", resp.StatusCode, resp.Header.Get("Retry-After"), out)
	}
	if rejected(t, h, "http", "memory") != before+1 {
		t.Error("not counted as memory")
	}
	hold.Release()
	if resp, out := sidecartest.HTTPDo(t, http.MethodPost, h.HTTPURL+"/v2/models/single/infer", big, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("with the budget free: %d %s", resp.StatusCode, out)
	}
	if held, _ := h.Models.Budget().Held(); held != 0 {
		t.Errorf("%d bytes still held after the requests", held)
	}
	// Larger than the whole budget: never.
	huge := []byte(`{"inputs":[]}` + strings.Repeat(" ", 65<<10))
	if resp, _ := sidecartest.HTTPDo(t, http.MethodPost, h.HTTPURL+"/v2/models/head_a/infer", huge, map[string]string{"Content-Length": strconv.Itoa(len(huge))}); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a body larger than the budget: %d, want 413", resp.StatusCode)
	}
}

// TestBudgetGRPC: the same over gRPC: RESOURCE_EXHAUSTED, with a
// retry-after trailer when it may fit later.
func TestBudgetGRPC(t *testing.T) {
	h := sidecartest.StartHarness(t, func(c *sidecartest.CtlConfig) {
		c.Limits = "  max_inflight_bytes: 64KiB\n  max_inputs: 8\n  max_outputs: 8\n  max_parameters: 8\n"
	})
	req := sidecartest.CtlRequest("single", "b", sidecartest.CtlBatch)
	req.Parameters = map[string]*tritonpb.InferParameter{"pad": {ParameterChoice: &tritonpb.InferParameter_StringParam{StringParam: strings.Repeat("x", 4<<10)}}}
	hold, err := h.Models.Budget().Reserve(64<<10 - 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, model := range []string{"single", "head_a"} {
		req.ModelName = model
		if model == "head_a" {
			req = sidecartest.HeadRequest("head_a", "h", []float64{1, 2, 3, 4})
			req.Parameters = map[string]*tritonpb.InferParameter{"pad": {ParameterChoice: &tritonpb.InferParameter_StringParam{StringParam: strings.Repeat("x", 4<<10)}}}
		}
		var trailer metadata.MD
		_, err := h.Client.ModelInfer(context.Background(), req, grpc.Trailer(&trailer))
		if st := status.Convert(err); st.Code() != grpccodes.ResourceExhausted || !strings.Contains(st.Message(), "max_inflight_bytes") {
			t.Errorf("%s with the budget held: %v", model, err)
		}
		if got := trailer.Get("retry-after"); len(got) != 1 || got[0] != "1" {
			t.Errorf("%s: retry-after trailer %v, want 1", model, got)
		}
	}
	hold.Release()
	if _, err := h.Client.ModelInfer(context.Background(), req); err != nil {
		t.Errorf("with the budget free: %v", err)
	}
}

// TestAdmissionShedsOverBothProtocols: a client over its rate of new
// preferences (admission.key_rate, keyed by admission.key_header) is shed
// with 429 and Retry-After, or RESOURCE_EXHAUSTED and a retry-after
// trailer; another key is not; a cached preference is never shed.
func TestAdmissionShedsOverBothProtocols(t *testing.T) {
	h := sidecartest.StartHarness(t, func(c *sidecartest.CtlConfig) {
		c.Admission = "  key_header: x-user\n  key_rate: 0.001\n  key_burst: 1\n  retry_after: 2s\n"
	})
	alice := metadata.Pairs("x-user", "alice")
	ctx := metadata.NewOutgoingContext(context.Background(), alice)
	call := func(ctx context.Context, pref string) (metadata.MD, error) {
		var trailer metadata.MD
		_, err := h.Client.ModelInfer(metadata.AppendToOutgoingContext(ctx, "react-preference", pref), sidecartest.CtlRequest("single", "s", sidecartest.CtlBatch), grpc.Trailer(&trailer))
		return trailer, err
	}
	if _, err := call(ctx, "a=1,b=1"); err != nil {
		t.Fatal(err)
	}
	if _, err := call(ctx, "a=1,b=1"); err != nil {
		t.Fatalf("a cached preference: %v", err)
	}
	trailer, err := call(ctx, "a=1,c=1")
	if st := status.Convert(err); st.Code() != grpccodes.ResourceExhausted || !strings.Contains(st.Message(), "too many new preferences") {
		t.Fatalf("alice's second new preference: %v, want RESOURCE_EXHAUSTED", err)
	}
	if got := trailer.Get("retry-after"); len(got) != 1 || got[0] != "2" {
		t.Errorf("retry-after trailer %v, want 2", got)
	}
	bob := metadata.NewOutgoingContext(context.Background(), metadata.Pairs("x-user", "bob"))
	if _, err := call(bob, "a=1,c=1"); err != nil {
		t.Errorf("bob's first new preference: %v", err)
	}
	body, hdr := sidecartest.InferBody(t, sidecartest.CtlRequest("", "s", sidecartest.CtlBatch), true)
	hdr["X-User"], hdr["React-Preference"] = "alice", "b=1,c=1"
	resp, out := sidecartest.HTTPDo(t, http.MethodPost, h.HTTPURL+"/v2/models/single/infer", body, hdr)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "2" {
		t.Errorf("HTTP: %d, Retry-After %q, %s; want 429, 2", resp.StatusCode, resp.Header.Get("Retry-After"), out)
	}
	if v, _ := sidecartest.MetricValue(sidecartest.Scrape(t, h.Metrics.Handler()), "react_wp_solves_shed_total", map[string]string{"components": "zoo", "reason": "key_rate"}); v != 2 {
		t.Errorf("react_wp_solves_shed_total{key_rate} = %v, want 2", v)
	}
}

// TestAdmissionPresetsOnlyAndGrid: presets_only refuses a preference of
// its own on both protocols (INVALID_ARGUMENT / 400), counted; with a grid,
// the echo is the rounded preference and the logits are W_p's of it.
func TestAdmissionPresetsOnlyAndGrid(t *testing.T) {
	h := sidecartest.StartHarness(t, func(c *sidecartest.CtlConfig) { c.Admission = "  presets_only: true\n" })
	ctx := metadata.AppendToOutgoingContext(context.Background(), "react-preference", "a=1,c=1")
	_, err := h.Client.ModelInfer(ctx, sidecartest.CtlRequest("single", "p", sidecartest.CtlBatch))
	if st := status.Convert(err); st.Code() != grpccodes.InvalidArgument || !strings.Contains(st.Message(), "only presets") {
		t.Errorf("gRPC: %v", err)
	}
	body, hdr := sidecartest.InferBody(t, sidecartest.CtlRequest("", "p", sidecartest.CtlBatch), true)
	hdr["React-Preference"] = "a=1,c=1"
	if resp, out := sidecartest.HTTPDo(t, http.MethodPost, h.HTTPURL+"/v2/models/single/infer", body, hdr); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("HTTP: %d %s", resp.StatusCode, out)
	}
	hdr["React-Preference"] = "a=0.2,b=0.8" // the preset b_first's preference
	if resp, out := sidecartest.HTTPDo(t, http.MethodPost, h.HTTPURL+"/v2/models/single/infer", body, hdr); resp.StatusCode != http.StatusOK {
		t.Errorf("a preset's preference: %d %s", resp.StatusCode, out)
	}
	if rejected(t, h, "grpc", "presets_only") != 1 || rejected(t, h, "http", "presets_only") != 1 {
		t.Error("presets_only refusals not counted")
	}

	g := sidecartest.StartHarness(t, func(c *sidecartest.CtlConfig) { c.Admission = "  preference_grid: 10\n" })
	var hdrMD metadata.MD
	resp, err := g.Client.ModelInfer(metadata.AppendToOutgoingContext(context.Background(), "react-preference", "a=0.33,b=0.67"),
		sidecartest.CtlRequest("multi", "g", sidecartest.CtlBatch), grpc.Header(&hdrMD))
	if err != nil {
		t.Fatal(err)
	}
	if got := hdrMD.Get("react-preference"); len(got) != 1 || got[0] != "a=0.3,b=0.7" {
		t.Errorf("echo %v, want a=0.3,b=0.7", got)
	}
	for i, task := range sidecartest.CtlTasks {
		if err := sidecartest.CheckLogits(g.Scenario, task, []float64{0.3, 0.7, 0}, sidecartest.CtlBatch, resp.GetRawOutputContents()[i]); err != nil {
			t.Error(err)
		}
	}
	if v, _ := sidecartest.MetricValue(sidecartest.Scrape(t, g.Metrics.Handler()), "react_preference_gridded_total", map[string]string{"model": "multi"}); v != 1 {
		t.Errorf("react_preference_gridded_total = %v, want 1", v)
	}
}

// TestGRPCAsTriton: the smaller differences with Triton over gRPC: a shape
// with -1 is refused with Triton's reason (not "does not match" itself);
// triton_* parameters are refused as Triton's gRPC server refuses them,
// but for the one it allows; an output requested twice is answered once.
func TestGRPCAsTriton(t *testing.T) {
	h := sidecartest.StartHarness(t, nil)
	req := sidecartest.CtlRequest("single", "s", sidecartest.CtlBatch[:3])
	req.Inputs[0].Shape = []int64{-1, 3}
	_, err := h.Client.ModelInfer(context.Background(), req)
	if st := status.Convert(err); st.Code() != grpccodes.InvalidArgument || !strings.Contains(st.Message(), `all input dimensions should be specified for input "x", got [-1 3]`) {
		t.Errorf("shape [-1 3]: %v", err)
	}
	req = sidecartest.CtlRequest("single", "s", sidecartest.CtlBatch)
	req.Parameters = map[string]*tritonpb.InferParameter{"triton_x": {ParameterChoice: &tritonpb.InferParameter_BoolParam{BoolParam: true}}}
	_, err = h.Client.ModelInfer(context.Background(), req)
	if st := status.Convert(err); st.Code() != grpccodes.InvalidArgument || !strings.Contains(st.Message(), "reserved for Triton usage") {
		t.Errorf("triton_x: %v", err)
	}
	req.Parameters = map[string]*tritonpb.InferParameter{limits.AllowedTritonParameter: {ParameterChoice: &tritonpb.InferParameter_BoolParam{BoolParam: true}}}
	if _, err := h.Client.ModelInfer(context.Background(), req); err != nil {
		t.Errorf("%s: %v", limits.AllowedTritonParameter, err)
	}
	resp, err := h.Client.ModelInfer(context.Background(), sidecartest.CtlRequest("multi", "d", sidecartest.CtlBatch, "logits_b", "logits_a", "logits_b"))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(resp.GetOutputs()); n != 2 || resp.GetOutputs()[0].GetName() != "logits_b" || resp.GetOutputs()[1].GetName() != "logits_a" {
		t.Errorf("outputs %v, want logits_b then logits_a", resp.GetOutputs())
	}
}

// TestHTTPRawRequest: a raw binary request (Inference-Header-Content-Length
// 0) to a controllable model is its only input's data, batch 1, and is
// answered in binary as Triton answers it; one whose size does not fit is
// refused.
func TestHTTPRawRequest(t *testing.T) {
	h := sidecartest.StartHarness(t, nil)
	row := sidecartest.CtlBatch[9:12]
	resp, out := sidecartest.HTTPDo(t, http.MethodPost, h.HTTPURL+"/v2/models/single/infer", faketriton.Encode("FP32", row), map[string]string{restapi.HeaderContentLength: "0"})
	if resp.StatusCode != http.StatusOK || resp.Header.Get(restapi.HeaderContentLength) == "" {
		t.Fatalf("%d %s (Inference-Header-Content-Length %q)", resp.StatusCode, out, resp.Header.Get(restapi.HeaderContentLength))
	}
	r, err := tritonhttp.DecodeResponse(out, resp.Header.Get(restapi.HeaderContentLength))
	if err != nil {
		t.Fatal(err)
	}
	if err := sidecartest.CheckLogits(h.Scenario, "a", []float64{1, 0, 0}, row, r.GetRawOutputContents()[0]); err != nil {
		t.Error(err)
	}
	resp, out = sidecartest.HTTPDo(t, http.MethodPost, h.HTTPURL+"/v2/models/single/infer", faketriton.Encode("FP32", sidecartest.CtlBatch[:6]), map[string]string{restapi.HeaderContentLength: "0"})
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("two rows as raw data of a batch of one: %d %s", resp.StatusCode, out)
	}
}

// TestHTTPIndexSpliced: the HTTP repository index is Triton's answer with
// its entries byte for byte, the shadowed model's replaced by the
// sidecar's, written as Triton writes them.
func TestHTTPIndexSpliced(t *testing.T) {
	h := sidecartest.StartHarness(t, nil)
	resp, out := sidecartest.HTTPDo(t, http.MethodPost, h.HTTPURL+"/v2/repository/index", nil, nil)
	want := `[{"name":"backbone","version":"1","state":"READY"},{"name":"head_a","version":"1","state":"READY"},` +
		`{"name":"head_b","version":"1","state":"READY"},{"name":"head_c","version":"1","state":"READY"},` +
		`{"name":"single","version":"1","state":"READY"},{"name":"multi","version":"1","state":"READY"}]`
	if resp.StatusCode != http.StatusOK || string(out) != want || resp.Header.Get("Content-Length") != strconv.Itoa(len(want)) {
		t.Errorf("index: %d %s (Content-Length %s)\nwant %s", resp.StatusCode, out, resp.Header.Get("Content-Length"), want)
	}
	resp, out = sidecartest.HTTPDo(t, http.MethodPost, h.HTTPURL+"/v2/repository/index", []byte(`{"ready":`), nil)
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(string(out), "failed to parse") {
		t.Errorf("a malformed body: %d %s, want Triton's own 500", resp.StatusCode, out)
	}
}
