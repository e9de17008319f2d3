package controllable_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	grpccodes "google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/internal/sidecartest"
)

// solveRateCall is one request of TestAdmissionSolveRate: over protocol
// (grpc or http), from client key user, with the react-preference or
// react-preset header (neither: the default preference).
type solveRateCall struct {
	protocol, user, header, value string
}

// send sends c to h's model single and returns the status (gRPC's code as
// an int, or HTTP's status), the retry-after it was told ("" if none) and
// the error message.
func (c solveRateCall) send(t *testing.T, h *sidecartest.Harness) (code int, retryAfter, msg string) {
	t.Helper()
	if c.protocol == "grpc" {
		md := metadata.Pairs("x-user", c.user)
		if c.header != "" {
			md.Set(c.header, c.value)
		}
		var trailer metadata.MD
		_, err := h.Client.ModelInfer(metadata.NewOutgoingContext(context.Background(), md), sidecartest.CtlRequest("single", "s", sidecartest.CtlBatch), grpc.Trailer(&trailer))
		if got := trailer.Get("retry-after"); len(got) > 0 {
			retryAfter = got[0]
		}
		st := status.Convert(err)
		return int(st.Code()), retryAfter, st.Message()
	}
	body, hdr := sidecartest.InferBody(t, sidecartest.CtlRequest("", "s", sidecartest.CtlBatch), true)
	hdr["X-User"] = c.user
	if c.header != "" {
		hdr[c.header] = c.value
	}
	resp, out := sidecartest.HTTPDo(t, http.MethodPost, h.HTTPURL+"/v2/models/single/infer", body, hdr)
	if resp.StatusCode == http.StatusOK {
		out = nil
	}
	return resp.StatusCode, resp.Header.Get("Retry-After"), string(out)
}

const ok, shed, exhausted = http.StatusOK, http.StatusTooManyRequests, int(grpccodes.ResourceExhausted)

// sendSteps sends each call to h and checks its status against want (ok,
// shed or exhausted), and that a refusal says retry after 3 s and that
// every client's share was spent.
func sendSteps(t *testing.T, h *sidecartest.Harness, calls []solveRateCall, want []int) {
	t.Helper()
	for i, c := range calls {
		code, retry, msg := c.send(t, h)
		if c.protocol == "grpc" && code == int(grpccodes.OK) {
			code = ok
		}
		switch {
		case code != want[i]:
			t.Errorf("%+v: status %d (%s), want %d", c, code, msg, want[i])
		case code != ok && (retry != "3" || !strings.Contains(msg, "too many new preferences from all clients")):
			t.Errorf("%+v: retry-after %q, %q; want 3 and the shared rate's message", c, retry, msg)
		}
	}
}

// TestAdmissionSolveRate: admission.solve_rate is one budget for every
// client key: once two keys have used its burst, a third key's new
// preference is shed on both protocols (RESOURCE_EXHAUSTED with a
// retry-after trailer, 429 with Retry-After), counted by reason
// solve_rate, while cached preferences, the default and presets are
// served; a reload that raises the rate admits again, and one that lowers
// it sheds again.
func TestAdmissionSolveRate(t *testing.T) {
	h := sidecartest.StartHarness(t, func(c *sidecartest.CtlConfig) {
		c.Admission = "  key_header: x-user\n  solve_rate: 0.001\n  solve_burst: 2\n  retry_after: 3s\n"
	})
	pref := func(protocol, user, p string) solveRateCall {
		return solveRateCall{protocol, user, "react-preference", p}
	}
	steps := func(t *testing.T, calls []solveRateCall, want []int) {
		t.Helper()
		sendSteps(t, h, calls, want)
	}
	steps(t, []solveRateCall{
		pref("grpc", "alice", "a=1,b=1"),
		pref("http", "bob", "a=1,c=1"),
		pref("grpc", "carol", "b=1,c=1"), // a key of its own, the shared budget spent
		pref("http", "dave", "b=1,c=1"),
		pref("http", "carol", "a=1,b=1"), // cached
		pref("grpc", "dave", "a=1,c=1"),  // cached
		{"grpc", "erin", "react-preset", "b_first"},
		{"http", "erin", "react-preset", "b_first"},
		{"grpc", "erin", "", ""}, // the default
	}, []int{ok, ok, exhausted, shed, ok, ok, ok, ok, ok})
	if v, _ := sidecartest.MetricValue(sidecartest.Scrape(t, h.Metrics.Handler()), "react_wp_solves_shed_total", map[string]string{"components": "zoo", "reason": "solve_rate"}); v != 2 {
		t.Errorf("react_wp_solves_shed_total{solve_rate} = %v, want 2", v)
	}

	reload := func(rate float64, burst int) {
		t.Helper()
		cfg, err := config.Load(h.ConfigPath, nil)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Admission.SolveRate, cfg.Admission.SolveBurst = rate, burst
		if err := h.Models.Reload(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
	}
	reload(0, 0) // no bound
	var calls []solveRateCall
	var want []int
	for i := range 6 {
		calls = append(calls, pref([]string{"grpc", "http"}[i%2], "carol", fmt.Sprintf("a=1,b=%d", i+2)))
		want = append(want, ok)
	}
	steps(t, calls, want)
	reload(0.001, 1)
	steps(t, []solveRateCall{
		pref("http", "carol", "b=1,c=1"),
		pref("grpc", "dave", "a=1,b=9"),
		pref("http", "erin", "a=1,b=10"),
	}, []int{ok, exhausted, shed})
}

// TestAdmissionSolveShare: admission.solve_share, once its burst is
// spent, sheds every client's new preference on both protocols
// (RESOURCE_EXHAUSTED with a retry-after trailer, 429 with Retry-After),
// counted by reason solve_share, with the debt on the time-left gauge,
// while cached preferences, the default and presets are served; a reload
// to 0 lifts it and removes the gauge, and one back to a share restores
// it, full.
func TestAdmissionSolveShare(t *testing.T) {
	// A share so small that the debt of the first solve is never paid off
	// within the test, and a burst of a nanosecond, which that solve spends.
	h := sidecartest.StartHarness(t, func(c *sidecartest.CtlConfig) {
		c.Admission = "  solve_share: 0.000001\n  solve_share_burst: 1ns\n  retry_after: 3s\n"
	})
	pref := func(protocol, user, p string) solveRateCall {
		return solveRateCall{protocol, user, "react-preference", p}
	}
	sendSteps(t, h, []solveRateCall{
		pref("grpc", "alice", "a=1,b=1"),
		pref("grpc", "bob", "a=1,c=1"),
		pref("http", "carol", "b=1,c=1"),
		pref("http", "carol", "a=1,b=1"), // cached
		{"grpc", "erin", "react-preset", "b_first"},
		{"http", "erin", "react-preset", "b_first"},
		{"http", "erin", "", ""}, // the default
	}, []int{ok, exhausted, shed, ok, ok, ok, ok})
	metrics := sidecartest.Scrape(t, h.Metrics.Handler())
	if v, _ := sidecartest.MetricValue(metrics, "react_wp_solves_shed_total", map[string]string{"components": "zoo", "reason": "solve_share"}); v != 2 {
		t.Errorf("react_wp_solves_shed_total{solve_share} = %v, want 2", v)
	}
	if v, ok := sidecartest.MetricValue(metrics, "react_wp_solve_time_left_seconds", nil); !ok || v >= 0 {
		t.Errorf("react_wp_solve_time_left_seconds = %v (present %v), want a debt", v, ok)
	}

	cfg, err := config.Load(h.ConfigPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Admission.SolveShare = 0
	if err := h.Models.Reload(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	sendSteps(t, h, []solveRateCall{pref("grpc", "bob", "a=1,c=1"), pref("http", "carol", "b=1,c=1")}, []int{ok, ok})
	if _, ok := sidecartest.MetricValue(sidecartest.Scrape(t, h.Metrics.Handler()), "react_wp_solve_time_left_seconds", nil); ok {
		t.Error("react_wp_solve_time_left_seconds after a reload to solve_share 0, want none")
	}

	// Back to a share: the gauge is there again, full (its burst).
	cfg.Admission.SolveShare, cfg.Admission.SolveShareBurst = 0.5, 2*time.Second
	if err := h.Models.Reload(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if v, ok := sidecartest.MetricValue(sidecartest.Scrape(t, h.Metrics.Handler()), "react_wp_solve_time_left_seconds", nil); !ok || v != 2 {
		t.Errorf("react_wp_solve_time_left_seconds after a reload to solve_share 0.5, burst 2s = %v (present %v), want 2", v, ok)
	}
}
