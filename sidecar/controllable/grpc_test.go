package controllable_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/sidecar/internal/faketriton"
	"github.com/mergectl/react-triton/sidecar/internal/sidecartest"
	"github.com/mergectl/react-triton/sidecar/passthrough"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// TestModelsGRPCInfer: ModelInfer for a controllable model is answered by
// the sidecar (backbone → W_p → heads), with the preference from the
// metadata or the parameters, echoed in the react-preference header and
// parameter; ReACT's metadata never reaches Triton, the rest does; other
// models pass through.
func TestModelsGRPCInfer(t *testing.T) {
	h := sidecartest.StartHarness(t, nil)
	tests := []struct {
		name      string
		md        metadata.MD
		params    map[string]string
		weights   []float64
		canonical string
	}{
		{name: "default", weights: []float64{1, 0, 0}, canonical: "a=1"},
		{name: "metadata", md: metadata.Pairs("react-preference", "a=1,b=1,c=1"), weights: []float64{0.333334, 0.333333, 0.333333},
			canonical: "a=0.333334,b=0.333333,c=0.333333"},
		{name: "metadata preset", md: metadata.Pairs("react-preset", "b_first"), weights: []float64{0.2, 0.8, 0}, canonical: "a=0.2,b=0.8"},
		{name: "metadata beats parameter", md: metadata.Pairs("react-preference", "c=2"), params: map[string]string{"react-preference": "a=1"},
			weights: []float64{0, 0, 1}, canonical: "c=1"},
		{name: "parameter", params: map[string]string{"react-preference": "b=1,c=1"}, weights: []float64{0, 0.5, 0.5}, canonical: "b=0.5,c=0.5"},
		{name: "none", md: metadata.Pairs("react-preference", "none"), canonical: "none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			md := metadata.Join(tt.md, metadata.Pairs("x-trace", "abc"))
			ctx := metadata.NewOutgoingContext(context.Background(), md)
			req := sidecartest.CtlRequest("multi", "id-"+tt.name, sidecartest.CtlBatch)
			req.Parameters = map[string]*tritonpb.InferParameter{"custom": {ParameterChoice: &tritonpb.InferParameter_StringParam{StringParam: "v"}}}
			for k, v := range tt.params {
				req.Parameters[k] = &tritonpb.InferParameter{ParameterChoice: &tritonpb.InferParameter_StringParam{StringParam: v}}
			}
			var hdr metadata.MD
			resp, err := h.Client.ModelInfer(ctx, req, grpc.Header(&hdr))
			if err != nil {
				t.Fatal(err)
			}
			if got := hdr.Get("react-preference"); !slices.Equal(got, []string{tt.canonical}) {
				t.Errorf("react-preference header %q, want %q", got, tt.canonical)
			}
			if got := resp.GetParameters()["react-preference"].GetStringParam(); got != tt.canonical {
				t.Errorf("react-preference parameter %q, want %q", got, tt.canonical)
			}
			if resp.GetModelName() != "multi" || resp.GetModelVersion() != "1" || resp.GetId() != "id-"+tt.name {
				t.Errorf("response model %q version %q id %q", resp.GetModelName(), resp.GetModelVersion(), resp.GetId())
			}
			for i, task := range sidecartest.CtlTasks {
				if err := sidecartest.CheckLogits(h.Scenario, task, tt.weights, sidecartest.CtlBatch, resp.GetRawOutputContents()[i]); err != nil {
					t.Error(err)
				}
			}
			for _, m := range []string{"backbone", "head_a", "head_b", "head_c"} {
				md := h.Fake.LastMetadata(m)
				for k := range md {
					if strings.HasPrefix(k, "react-") {
						t.Errorf("%s received ReACT's metadata %s: %q", m, k, md[k])
					}
				}
				if got := md.Get("x-trace"); !slices.Equal(got, []string{"abc"}) {
					t.Errorf("%s received x-trace %q, want abc", m, got)
				}
				last := h.Fake.LastRequest(m)
				if last.GetId() != "id-"+tt.name || len(last.GetParameters()) != 1 || last.GetParameters()["custom"] == nil {
					t.Errorf("%s received id %q, parameters %v", m, last.GetId(), last.GetParameters())
				}
			}
		})
	}

	t.Run("pass-through", func(t *testing.T) {
		before := h.Fake.Calls("backbone")
		ctx := metadata.NewOutgoingContext(context.Background(), metadata.Pairs("react-preference", "b=1"))
		resp, err := h.Client.ModelInfer(ctx, sidecartest.HeadRequest("head_a", "p", []float64{1, 2, 3, 4}))
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetModelName() != "head_a" || h.Fake.Calls("backbone") != before {
			t.Errorf("pass-through answered by %q, backbone called %d times", resp.GetModelName(), h.Fake.Calls("backbone")-before)
		}
		if _, ok := resp.GetParameters()["react-preference"]; ok {
			t.Error("a pass-through response carries react-preference")
		}
		if md := h.Fake.LastMetadata("head_a"); len(md.Get("react-preference")) != 0 {
			t.Error("react-preference metadata reached Triton through the pass-through")
		}
	})

	t.Run("errors", func(t *testing.T) {
		before := h.Fake.TotalCalls()
		ctx := metadata.NewOutgoingContext(context.Background(), metadata.Pairs("react-preference", "a=1,q=2"))
		_, err := h.Client.ModelInfer(ctx, sidecartest.CtlRequest("multi", "e", sidecartest.CtlBatch))
		if st := status.Convert(err); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), "(known: a, b, c) (presets: b_first)") ||
			!strings.Contains(st.Message(), "presets: b_first") {
			t.Errorf("bad preference: %v", err)
		}
		req := sidecartest.CtlRequest("multi", "e", sidecartest.CtlBatch)
		req.ModelVersion = "2"
		if _, err := h.Client.ModelInfer(context.Background(), req); status.Code(err) != codes.NotFound {
			t.Errorf("version 2: %v", err)
		}
		if n := h.Fake.TotalCalls() - before; n != 0 {
			t.Errorf("%d calls reached Triton for refused requests", n)
		}
		// Garbage that does not decode as a ModelInferRequest but names the
		// model is refused by the sidecar.
		conn := sidecartest.Dial(t, h.Server.GRPCAddr().String())
		var out passthrough.Frame
		err = conn.Invoke(context.Background(), tritonpb.GRPCInferenceService_ModelInfer_FullMethodName, &passthrough.Frame{Payload: []byte("\x0a\x05multi\x2a\x02\x0a\x05")}, &out,
			grpc.ForceCodecV2(passthrough.Codec{}))
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("undecodable request: %v", err)
		}
	})
}

// TestModelsGRPCMaxRequestBytes: limits.max_request_bytes bounds "a gRPC
// message of a controllable model" (config.Limits).
func TestModelsGRPCMaxRequestBytes(t *testing.T) {
	h := sidecartest.StartHarness(t, func(c *sidecartest.CtlConfig) { c.MaxRequestBytes = "1KiB" })
	padded := func(n int) *tritonpb.ModelInferRequest {
		req := sidecartest.CtlRequest("multi", "big", sidecartest.CtlBatch)
		req.Parameters = map[string]*tritonpb.InferParameter{"pad": {ParameterChoice: &tritonpb.InferParameter_StringParam{StringParam: strings.Repeat("x", n)}}}
		return req
	}
	before := h.Fake.TotalCalls()
	_, err := h.Client.ModelInfer(context.Background(), padded(4096))
	if status.Code(err) != codes.ResourceExhausted || h.Fake.TotalCalls() != before {
		t.Errorf("a request of over 4 KiB with limits.max_request_bytes 1KiB: %v (%d calls reached Triton)", err, h.Fake.TotalCalls()-before)
	}
	if v, _ := sidecartest.MetricValue(sidecartest.Scrape(t, h.Metrics.Handler()), "react_rejected_requests_total", map[string]string{"protocol": "grpc", "reason": "too_large"}); v != 1 {
		t.Errorf("react_rejected_requests_total{grpc,too_large} = %v", v)
	}
	if _, err := h.Client.ModelInfer(context.Background(), padded(600)); err != nil {
		t.Errorf("a request under the limit: %v", err)
	}
	// On a stream too, as an error_message.
	stream, err := h.Client.ModelStreamInfer(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(padded(4096)); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil || !strings.Contains(resp.GetErrorMessage(), "max_request_bytes") || resp.GetInferResponse().GetId() != "big" {
		t.Errorf("stream: %v, %v", resp, err)
	}
	stream.CloseSend()
}

// TestModelsGRPCModelAPI: metadata, readiness, configuration, statistics
// and the repository index of controllable models come from the sidecar;
// the other models' from Triton.
func TestModelsGRPCModelAPI(t *testing.T) {
	h := sidecartest.StartHarness(t, nil)
	ctx := context.Background()

	md, err := h.Client.ModelMetadata(ctx, &tritonpb.ModelMetadataRequest{Name: "multi"})
	if err != nil {
		t.Fatal(err)
	}
	var outs []string
	for _, o := range md.GetOutputs() {
		outs = append(outs, o.GetName())
	}
	if md.GetPlatform() != "react" || !slices.Equal(md.GetVersions(), []string{"1"}) || !slices.Equal(outs, []string{"logits_a", "logits_b", "logits_c"}) ||
		len(md.GetInputs()) != 1 || md.GetInputs()[0].GetName() != "x" {
		t.Errorf("ModelMetadata(multi) = %v", md)
	}
	if md, err := h.Client.ModelMetadata(ctx, &tritonpb.ModelMetadataRequest{Name: "head_a"}); err != nil || md.GetPlatform() != "fake" {
		t.Errorf("ModelMetadata(head_a) = %v, %v; want Triton's", md, err)
	}
	if _, err := h.Client.ModelMetadata(ctx, &tritonpb.ModelMetadataRequest{Name: "multi", Version: "2"}); status.Code(err) != codes.NotFound {
		t.Errorf("ModelMetadata(multi, 2): %v", err)
	}
	if _, err := h.Client.ModelMetadata(ctx, &tritonpb.ModelMetadataRequest{Name: "multi", Version: "1"}); err != nil {
		t.Errorf("ModelMetadata(multi, 1): %v", err)
	}

	cfg, err := h.Client.ModelConfig(ctx, &tritonpb.ModelConfigRequest{Name: "single"})
	if err != nil || cfg.GetConfig().GetPlatform() != "react" || cfg.GetConfig().GetMaxBatchSize() != 8 ||
		cfg.GetConfig().GetParameters()["react.tasks"].GetStringValue() != "a,b,c" {
		t.Errorf("ModelConfig(single) = %v, %v", cfg, err)
	}
	if cfg, err := h.Client.ModelConfig(ctx, &tritonpb.ModelConfigRequest{Name: "backbone"}); err != nil || cfg.GetConfig().GetPlatform() != "fake" {
		t.Errorf("ModelConfig(backbone) = %v, %v; want Triton's", cfg, err)
	}

	ready := func(name string) bool {
		t.Helper()
		r, err := h.Client.ModelReady(ctx, &tritonpb.ModelReadyRequest{Name: name})
		if err != nil {
			t.Fatalf("ModelReady(%s): %v", name, err)
		}
		return r.GetReady()
	}
	if !ready("multi") || !ready("single") {
		t.Error("controllable models not ready")
	}
	h.Fake.SetReady("head_c", false)
	if ready("multi") || !ready("single") || ready("head_c") {
		t.Error("with head_c not ready: want multi not ready, single ready, head_c not ready")
	}
	h.Fake.SetReady("head_c", true)
	h.Fake.SetMissing("head_c", true)
	if ready("multi") {
		t.Error("with head_c unloaded, multi is ready")
	}
	h.Fake.SetMissing("head_c", false)

	// Some requests, to count.
	for i := 0; i < 3; i++ {
		if _, err := h.Client.ModelInfer(ctx, sidecartest.CtlRequest("multi", "s", sidecartest.CtlBatch[:3*(i+1)])); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.Client.ModelInfer(ctx, sidecartest.CtlRequest("multi", "s", sidecartest.CtlBatch, "nope")); err == nil {
		t.Fatal("unknown output accepted")
	}
	st, err := h.Client.ModelStatistics(ctx, &tritonpb.ModelStatisticsRequest{Name: "multi"})
	if err != nil || len(st.GetModelStats()) != 1 {
		t.Fatalf("ModelStatistics(multi) = %v, %v", st, err)
	}
	s := st.GetModelStats()[0]
	is := s.GetInferenceStats()
	if s.GetName() != "multi" || s.GetVersion() != "1" || s.GetInferenceCount() != 1+2+3 || s.GetExecutionCount() != 3 ||
		is.GetSuccess().GetCount() != 3 || is.GetFail().GetCount() != 1 || is.GetQueue().GetCount() != 3 || is.GetSuccess().GetNs() == 0 {
		t.Errorf("ModelStatistics(multi) = %v; want 3 successes of 6 rows, 1 failure, queue count 3", s)
	}
	if _, err := h.Client.ModelStatistics(ctx, &tritonpb.ModelStatisticsRequest{Name: "multi", Version: "3"}); status.Code(err) != codes.InvalidArgument { // as Triton answers
		t.Errorf("ModelStatistics(multi, 3): %v", err)
	}
	if st, err := h.Client.ModelStatistics(ctx, &tritonpb.ModelStatisticsRequest{Name: "head_a"}); err != nil || st.GetModelStats()[0].GetInferenceCount() < 1000 {
		t.Errorf("ModelStatistics(head_a) = %v, %v; want Triton's", st, err)
	}

	all, err := h.Client.ModelStatistics(ctx, &tritonpb.ModelStatisticsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string][]*tritonpb.ModelStatistics{}
	for _, s := range all.GetModelStats() {
		byName[s.GetName()] = append(byName[s.GetName()], s)
	}
	for _, name := range []string{"backbone", "head_a", "head_b", "head_c", "multi", "single"} {
		if len(byName[name]) != 1 {
			t.Errorf("all statistics: %d entries for %s", len(byName[name]), name)
		}
	}
	if len(byName["multi"]) == 1 && byName["multi"][0].GetInferenceCount() != 6 {
		t.Errorf("all statistics: multi is Triton's shadowed model (%d), not the sidecar's", byName["multi"][0].GetInferenceCount())
	}
	if len(byName["backbone"]) == 1 && byName["backbone"][0].GetInferenceCount() < 1000 {
		t.Errorf("all statistics: backbone is not Triton's")
	}

	idx, err := h.Client.RepositoryIndex(ctx, &tritonpb.RepositoryIndexRequest{})
	if err != nil {
		t.Fatal(err)
	}
	entries := map[string][]*tritonpb.RepositoryIndexResponse_ModelIndex{}
	for _, m := range idx.GetModels() {
		entries[m.GetName()] = append(entries[m.GetName()], m)
	}
	for _, name := range []string{"backbone", "head_a", "multi", "single"} {
		if len(entries[name]) != 1 || entries[name][0].GetState() != "READY" {
			t.Errorf("index: %s = %v", name, entries[name])
		}
	}
	if e := entries["multi"]; len(e) == 1 && e[0].GetVersion() != "1" {
		t.Errorf("index: multi version %q", e[0].GetVersion())
	}
}

// TestModelsServerReadyWhileLoading: until the controllable models are
// built (here: the backbone is not ready on Triton), ServerReady is false,
// the models answer UNAVAILABLE and the index lists them as UNAVAILABLE;
// Start keeps trying and the sidecar becomes ready when Triton is.
func TestModelsServerReadyWhileLoading(t *testing.T) {
	h := sidecartest.NewHarness(t, nil)
	h.Fake.SetReady("backbone", false)
	started := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { started <- h.Models.Start(ctx) }()
	// Wait for Start's first attempt.
	sidecartest.WaitFor(t, 5*time.Second, "a first build attempt", func() bool { return h.Fake.ReadyCalls("backbone") > 0 })

	r, err := h.Client.ServerReady(ctx, &tritonpb.ServerReadyRequest{})
	if err != nil || r.GetReady() {
		t.Errorf("ServerReady while loading = %v, %v; want false", r, err)
	}
	_, err = h.Client.ModelInfer(ctx, sidecartest.CtlRequest("multi", "l", sidecartest.CtlBatch))
	if st := status.Convert(err); st.Code() != codes.Unavailable || !strings.Contains(st.Message(), "not loaded yet") {
		t.Errorf("ModelInfer while loading: %v", err)
	}
	if _, err := h.Client.ModelMetadata(ctx, &tritonpb.ModelMetadataRequest{Name: "multi"}); status.Code(err) != codes.Unavailable {
		t.Errorf("ModelMetadata while loading: %v", err)
	}
	if _, err := h.Client.ModelInfer(ctx, sidecartest.HeadRequest("head_a", "p", []float64{1, 2, 3, 4})); err != nil {
		t.Errorf("pass-through while loading: %v", err)
	}
	idx, err := h.Client.RepositoryIndex(ctx, &tritonpb.RepositoryIndexRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range idx.GetModels() {
		if (m.GetName() == "multi" || m.GetName() == "single") && m.GetState() != "UNAVAILABLE" {
			t.Errorf("index while loading: %v", m)
		}
	}
	if idx, err := h.Client.RepositoryIndex(ctx, &tritonpb.RepositoryIndexRequest{Ready: true}); err == nil {
		for _, m := range idx.GetModels() {
			if m.GetName() == "multi" || m.GetName() == "single" || m.GetName() == "backbone" {
				t.Errorf("ready-only index while loading lists %v", m)
			}
		}
	}

	h.Fake.SetReady("backbone", true)
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Start did not finish after the backbone became ready")
	}
	r, err = h.Client.ServerReady(ctx, &tritonpb.ServerReadyRequest{})
	if err != nil || !r.GetReady() {
		t.Errorf("ServerReady after loading = %v, %v", r, err)
	}
	h.Fake.SetServerReady(false)
	if r, err := h.Client.ServerReady(ctx, &tritonpb.ServerReadyRequest{}); err != nil || r.GetReady() {
		t.Errorf("ServerReady with Triton not ready = %v, %v; want Triton's false", r, err)
	}
	if _, err := h.Client.ModelInfer(ctx, sidecartest.CtlRequest("multi", "l", sidecartest.CtlBatch)); err != nil {
		t.Errorf("ModelInfer after loading: %v", err)
	}
}

// TestModelsStartPermanentProblem: a problem no wait cures ends Start at
// once, with every problem listed.
func TestModelsStartPermanentProblem(t *testing.T) {
	h := sidecartest.NewHarness(t, func(c *sidecartest.CtlConfig) { c.HeadTask = "zz" })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	err := h.Models.Start(ctx)
	if err == nil || !strings.Contains(err.Error(), `models[0].heads[0].task: unknown task "zz"`) {
		t.Fatalf("Start = %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Start took %v for a permanent problem", d)
	}
	if h.Models.Ready() {
		t.Error("Ready after a failed Start")
	}
}

// streamResult is what a stream answered for one request id.
type streamResult struct {
	resp *tritonpb.ModelStreamInferResponse
	n    int
}

// TestModelsStreamMixed: one ModelStreamInfer carries requests for
// controllable models and for Triton's; every response arrives, matched
// by id; a failing controllable request comes back as an error_message and
// the stream goes on.
func TestModelsStreamMixed(t *testing.T) {
	h := sidecartest.StartHarness(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ctx = metadata.NewOutgoingContext(ctx, metadata.Pairs("react-preference", "b=1", "x-trace", "s"))
	stream, err := h.Client.ModelStreamInfer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	type sent struct {
		model, fail string // fail: a substring of the expected error_message
		x           []float64
	}
	reqs := map[string]sent{}
	for i := 0; i < 30; i++ {
		id := fmt.Sprintf("r%02d", i)
		var s sent
		switch i % 5 {
		case 0, 1:
			s = sent{model: "multi", x: sidecartest.CtlBatch[:3*(1+i%4)]}
		case 2:
			s = sent{model: "head_a", x: []float64{float64(i), 1, 2, 3}}
		case 3:
			s = sent{model: "single", x: sidecartest.CtlBatch[3:]}
		case 4:
			if i%10 == 4 {
				s = sent{model: "multi", x: sidecartest.CtlBatch, fail: "unknown output"}
			} else {
				s = sent{model: "nosuchmodel", x: sidecartest.CtlBatch, fail: "nosuchmodel"}
			}
		}
		req := sidecartest.CtlRequest(s.model, id, s.x)
		if s.model == "head_a" {
			req = sidecartest.HeadRequest(s.model, id, s.x)
		}
		if s.fail == "unknown output" {
			req.Outputs = []*tritonpb.ModelInferRequest_InferRequestedOutputTensor{{Name: "bogus"}}
		}
		if err := stream.Send(req); err != nil {
			t.Fatal(err)
		}
		reqs[id] = s
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	got := map[string]*streamResult{}
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("stream ended with %v after %d responses", err, len(got))
		}
		id := resp.GetInferResponse().GetId()
		if got[id] == nil {
			got[id] = &streamResult{}
		}
		got[id].resp, got[id].n = resp, got[id].n+1
	}
	for id, s := range reqs {
		r := got[id]
		if r == nil {
			t.Errorf("%s (%s): no response", id, s.model)
			continue
		}
		if r.n != 1 {
			t.Errorf("%s: %d responses", id, r.n)
		}
		resp := r.resp
		if s.fail != "" {
			if !strings.Contains(resp.GetErrorMessage(), s.fail) {
				t.Errorf("%s (%s): error_message %q, want one about %q", id, s.model, resp.GetErrorMessage(), s.fail)
			}
			continue
		}
		if resp.GetErrorMessage() != "" {
			t.Errorf("%s (%s): error %q", id, s.model, resp.GetErrorMessage())
			continue
		}
		ir := resp.GetInferResponse()
		if ir.GetModelName() != s.model {
			t.Errorf("%s: answered by %q, want %q", id, ir.GetModelName(), s.model)
		}
		switch s.model {
		case "multi":
			if p := ir.GetParameters()["react-preference"].GetStringParam(); p != "b=1" {
				t.Errorf("%s: react-preference %q, want the stream's b=1", id, p)
			}
			for i, task := range sidecartest.CtlTasks {
				if err := sidecartest.CheckLogits(h.Scenario, task, []float64{0, 1, 0}, s.x, ir.GetRawOutputContents()[i]); err != nil {
					t.Errorf("%s: %v", id, err)
				}
			}
		case "single":
			if err := sidecartest.CheckLogits(h.Scenario, "a", []float64{0, 1, 0}, s.x, ir.GetRawOutputContents()[0]); err != nil {
				t.Errorf("%s: %v", id, err)
			}
		case "head_a":
			// Triton's own answer: the head applied to x as a feature.
			want := faketriton.Apply(h.Scenario.Head("a"), s.x)
			if out, _ := faketriton.Decode("FP32", ir.GetRawOutputContents()[0]); !closeTo(out, want, 1e-5) {
				t.Errorf("%s: pass-through answer %v, want %v", id, out, want)
			}
		}
	}
	for id := range got {
		if _, ok := reqs[id]; !ok {
			t.Errorf("response for an id never sent: %q", id)
		}
	}
	if md := h.Fake.LastMetadata("backbone"); len(md.Get("react-preference")) != 0 || len(md.Get("x-trace")) != 1 {
		t.Errorf("backbone received metadata %v", md)
	}
}

func closeTo(got, want []float64, tol float64) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range want {
		if d := got[i] - want[i]; d > tol*(1+abs(want[i])) || -d > tol*(1+abs(want[i])) {
			return false
		}
	}
	return true
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestModelsStreamOnlyControllable: a stream with controllable requests
// only ends cleanly without ever calling Triton's stream.
func TestModelsStreamOnlyControllable(t *testing.T) {
	h := sidecartest.StartHarness(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := h.Client.ModelStreamInfer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if err := stream.Send(sidecartest.CtlRequest("single", fmt.Sprint(i), sidecartest.CtlBatch)); err != nil {
			t.Fatal(err)
		}
	}
	stream.CloseSend()
	n := 0
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetErrorMessage() != "" {
			t.Error(resp.GetErrorMessage())
		}
		n++
	}
	if n != 5 {
		t.Errorf("%d responses for 5 requests", n)
	}
}

// TestModelsStreamWhileLoading: a stream request for a controllable model
// that is not built yet is answered with an error_message (as a unary one
// is answered UNAVAILABLE), and the sidecar survives. A crash would take
// the test binary down, so the scenario runs in a child process.
func TestModelsStreamWhileLoading(t *testing.T) {
	if os.Getenv("SIDECAR_TEST_CHILD") == "stream-while-loading" {
		streamWhileLoading(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestModelsStreamWhileLoading$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SIDECAR_TEST_CHILD=stream-while-loading")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the sidecar crashed or failed: %v\n%s", err, out)
	}
}

func streamWhileLoading(t *testing.T) {
	h := sidecartest.NewHarness(t, nil)
	h.Fake.SetReady("backbone", false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go h.Models.Start(ctx)
	stream, err := h.Client.ModelStreamInfer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(sidecartest.CtlRequest("multi", "loading", sidecartest.CtlBatch)); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatalf("Recv: %v", err)
	}
	if !strings.Contains(resp.GetErrorMessage(), "not loaded") || resp.GetInferResponse().GetId() != "loading" {
		t.Errorf("response while loading: %v", resp)
	}
	stream.CloseSend()
}

// TestModelsCancellationReachesTriton: a client's cancellation or deadline
// ends the sidecar's calls to Triton, on unary calls, streams and HTTP.
func TestModelsCancellationReachesTriton(t *testing.T) {
	h := sidecartest.StartHarness(t, nil)
	release := h.Fake.Hold("backbone")
	defer release()
	calls := func() int { return h.Fake.Calls("backbone") }

	t.Run("unary cancel", func(t *testing.T) {
		n, c := calls(), h.Fake.Cancelled("backbone")
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := h.Client.ModelInfer(ctx, sidecartest.CtlRequest("multi", "c", sidecartest.CtlBatch))
			done <- err
		}()
		sidecartest.WaitFor(t, 5*time.Second, "the backbone call", func() bool { return calls() > n })
		cancel()
		if err := <-done; status.Code(err) != codes.Canceled {
			t.Errorf("ModelInfer: %v", err)
		}
		sidecartest.WaitFor(t, 5*time.Second, "the cancellation at Triton", func() bool { return h.Fake.Cancelled("backbone") > c })
	})
	t.Run("unary deadline", func(t *testing.T) {
		c := h.Fake.Cancelled("backbone")
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		if _, err := h.Client.ModelInfer(ctx, sidecartest.CtlRequest("multi", "d", sidecartest.CtlBatch)); status.Code(err) != codes.DeadlineExceeded {
			t.Errorf("ModelInfer: %v", err)
		}
		sidecartest.WaitFor(t, 5*time.Second, "the deadline at Triton", func() bool { return h.Fake.Cancelled("backbone") > c })
	})
	t.Run("stream cancel", func(t *testing.T) {
		n, c := calls(), h.Fake.Cancelled("backbone")
		ctx, cancel := context.WithCancel(context.Background())
		stream, err := h.Client.ModelStreamInfer(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 2; i++ {
			if err := stream.Send(sidecartest.CtlRequest("single", fmt.Sprint(i), sidecartest.CtlBatch)); err != nil {
				t.Fatal(err)
			}
		}
		sidecartest.WaitFor(t, 5*time.Second, "the backbone calls", func() bool { return calls() >= n+2 })
		cancel()
		if _, err := stream.Recv(); status.Code(err) != codes.Canceled {
			t.Errorf("Recv after cancel: %v", err)
		}
		sidecartest.WaitFor(t, 5*time.Second, "the cancellations at Triton", func() bool { return h.Fake.Cancelled("backbone") >= c+2 })
	})
	t.Run("http cancel", func(t *testing.T) {
		n, c := calls(), h.Fake.Cancelled("backbone")
		ctx, cancel := context.WithCancel(context.Background())
		body, hdr := sidecartest.InferBody(t, sidecartest.CtlRequest("multi", "h", sidecartest.CtlBatch), false)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.HTTPURL+"/v2/models/multi/infer", bytes.NewReader(body))
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		done := make(chan error, 1)
		go func() {
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				resp.Body.Close()
			}
			done <- err
		}()
		sidecartest.WaitFor(t, 5*time.Second, "the backbone call", func() bool { return calls() > n })
		cancel()
		<-done
		sidecartest.WaitFor(t, 5*time.Second, "the cancellation at Triton", func() bool { return h.Fake.Cancelled("backbone") > c })
	})

	release()
	if _, err := h.Client.ModelInfer(context.Background(), sidecartest.CtlRequest("multi", "after", sidecartest.CtlBatch)); err != nil {
		t.Errorf("after the cancellations: %v", err)
	}
}
