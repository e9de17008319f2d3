package readiness_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/sidecar/internal/sidecartest"
	"github.com/mergectl/react-triton/sidecar/readiness"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// readyNow answers the sidecar's readiness on both protocols and /readyz:
// httpCode is 503 when the sidecar is not ready, and otherwise whatever
// Triton answered it (the fake answers 404).
func readyNow(t *testing.T, h *sidecartest.Harness) (httpCode int, grpcReady bool, readyz int) {
	t.Helper()
	resp, _ := sidecartest.HTTPDo(t, http.MethodGet, h.HTTPURL+"/v2/health/ready", nil, nil)
	r, err := h.Client.ServerReady(context.Background(), &tritonpb.ServerReadyRequest{})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.Models.ReadyzHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	return resp.StatusCode, r.GetReady(), rec.Code
}

// TestReadinessFollowsParts: after start-up, a head unloaded from Triton
// makes the sidecar not ready (503, ServerReady false, /readyz 503) and
// its controllable models answer UNAVAILABLE / 503 instead of Triton's
// NOT_FOUND; loaded again, everything is back, with no reload.
func TestReadinessFollowsParts(t *testing.T) {
	h := sidecartest.StartHarness(t, nil)
	if code, ready, readyz := readyNow(t, h); code == http.StatusServiceUnavailable || !ready || readyz != http.StatusOK {
		t.Fatalf("at start: %d %v %d", code, ready, readyz)
	}
	h.Fake.SetMissing("head_b", true) // unloaded
	sidecartest.WaitFor(t, 5*time.Second, "not ready", func() bool {
		code, ready, readyz := readyNow(t, h)
		return code == http.StatusServiceUnavailable && !ready && readyz == http.StatusServiceUnavailable
	})
	resp, body := sidecartest.HTTPDo(t, http.MethodGet, h.HTTPURL+"/v2/health/ready", nil, nil)
	if !strings.Contains(string(body), `\"multi\"`) || resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("/v2/health/ready: %d %s, want 503 naming the model", resp.StatusCode, body)
	}
	// multi calls head_b; single does not and still serves.
	_, err := h.Client.ModelInfer(context.Background(), sidecartest.CtlRequest("multi", "gone", sidecartest.CtlBatch))
	if st := status.Convert(err); st.Code() != codes.Unavailable || !strings.Contains(st.Message(), "not ready on Triton") {
		t.Errorf("gRPC multi with head_b gone: %v, want UNAVAILABLE", err)
	}
	body2, hdr := sidecartest.InferBody(t, sidecartest.CtlRequest("multi", "gone", sidecartest.CtlBatch), false)
	if resp, out := sidecartest.HTTPDo(t, http.MethodPost, h.HTTPURL+"/v2/models/multi/infer", body2, hdr); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("HTTP multi with head_b gone: %d %s, want 503", resp.StatusCode, out)
	}
	if _, err := h.Client.ModelInfer(context.Background(), sidecartest.CtlRequest("single", "ok", sidecartest.CtlBatch)); err != nil {
		t.Errorf("single (backbone, head_a) with head_b gone: %v", err)
	}
	if r, err := h.Client.ModelReady(context.Background(), &tritonpb.ModelReadyRequest{Name: "multi"}); err != nil || r.GetReady() {
		t.Errorf("ModelReady multi: %v %v", r, err)
	}
	if got, _ := sidecartest.MetricValue(sidecartest.Scrape(t, h.Metrics.Handler()), "react_ready", nil); got != 0 {
		t.Errorf("react_ready = %v, want 0", got)
	}
	// A version the controllable model does not have is still NOT_FOUND.
	req := sidecartest.CtlRequest("single", "v", sidecartest.CtlBatch)
	req.ModelVersion = "7"
	if _, err := h.Client.ModelInfer(context.Background(), req); status.Code(err) != codes.NotFound {
		t.Errorf("single version 7: %v, want NOT_FOUND", err)
	}

	h.Fake.SetMissing("head_b", false) // loaded again
	sidecartest.WaitFor(t, 5*time.Second, "ready again", func() bool {
		code, ready, readyz := readyNow(t, h)
		return code != http.StatusServiceUnavailable && ready && readyz == http.StatusOK
	})
	if _, err := h.Client.ModelInfer(context.Background(), sidecartest.CtlRequest("multi", "back", sidecartest.CtlBatch)); err != nil {
		t.Errorf("multi with head_b back: %v", err)
	}
	if !strings.Contains(h.Log.String(), "not ready") || !strings.Contains(h.Log.String(), "ready again") {
		t.Errorf("the log does not tell the changes:\n%s", h.Log.String())
	}
}

// TestReadinessCached: readiness probes in a burst cost Triton one
// ModelReady per part at most once a second.
func TestReadinessCached(t *testing.T) {
	h := sidecartest.StartHarness(t, nil)
	readyNow(t, h)
	before := h.Fake.ReadyCalls("head_c")
	for range 20 {
		readyNow(t, h)
	}
	if got := h.Fake.ReadyCalls("head_c") - before; got > 2 {
		t.Errorf("60 readiness answers asked Triton about head_c %d times", got)
	}
}

// TestReadyzFollowsTriton: /readyz is 503 while Triton says it is not
// ready, even with every part of the controllable models ready, and 200
// again once it is.
func TestReadyzFollowsTriton(t *testing.T) {
	h := sidecartest.StartHarness(t, nil)
	readyz := func() (int, string) {
		rec := httptest.NewRecorder()
		h.Models.ReadyzHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		return rec.Code, rec.Body.String()
	}
	if code, body := readyz(); code != http.StatusOK {
		t.Fatalf("at start: %d %s", code, body)
	}
	h.Fake.SetServerReady(false)
	if code, body := readyz(); code != http.StatusServiceUnavailable || !strings.Contains(body, "Triton is not ready") {
		t.Errorf("with Triton not ready: %d %q, want 503 saying so", code, body)
	}
	h.Fake.SetServerReady(true)
	if code, body := readyz(); code != http.StatusOK {
		t.Errorf("with Triton ready again: %d %s", code, body)
	}
}

// TestReadinessAfterReload: the cached readiness belongs to the models it
// was computed for; a reload's models are checked at the next probe, not
// answered with the old models' result of the last second.
func TestReadinessAfterReload(t *testing.T) {
	h := sidecartest.NewHarness(t, nil)
	h.Fake.Put(h.Scenario.BackboneModel("backbone2", "FP32"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := h.Models.Start(ctx); err != nil {
		t.Fatal(err)
	}
	h.Fake.SetReady("backbone", false)
	var seen time.Time
	sidecartest.WaitFor(t, 5*time.Second, "not ready", func() bool {
		code, ready, readyz := readyNow(t, h)
		seen = time.Now()
		return code == http.StatusServiceUnavailable && !ready && readyz == http.StatusServiceUnavailable
	})
	c := h.Config
	c.Components = filepath.Join(h.Dir, "components.safetensors")
	c.Backbone = "backbone2"
	if err := h.Models.Reload(ctx, sidecartest.LoadConfig(t, t.TempDir(), "new.yaml", c)); err != nil {
		t.Fatal(err)
	}
	code, ready, readyz := readyNow(t, h)
	if time.Since(seen) >= readiness.TTL {
		t.Skip("the reload took longer than the readiness cache lasts")
	}
	if code == http.StatusServiceUnavailable || !ready || readyz != http.StatusOK {
		t.Errorf("after a reload onto backbone2, ready on Triton: %d %v %d, want ready at once", code, ready, readyz)
	}
}
