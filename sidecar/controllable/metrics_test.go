package controllable_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc/metadata"

	"github.com/mergectl/react-triton/sidecar/internal/sidecartest"
)

// TestModelsMetrics counts requests of every kind and checks the metrics
// they leave: by model, protocol and the preference's source; per stage;
// W_p lookups by result; the cache's size; errors by code; refused bodies.
// No label carries a raw preference.
func TestModelsMetrics(t *testing.T) {
	h := sidecartest.StartHarness(t, nil)
	grpcInfer := func(md metadata.MD, ok bool) {
		t.Helper()
		ctx := metadata.NewOutgoingContext(context.Background(), md)
		_, err := h.Client.ModelInfer(ctx, sidecartest.CtlRequest("multi", "m", sidecartest.CtlBatch))
		if (err == nil) != ok {
			t.Fatalf("ModelInfer(%v): %v", md, err)
		}
	}
	httpInfer := func(header map[string]string, body []byte) int {
		t.Helper()
		if body == nil {
			var hdr map[string]string
			body, hdr = sidecartest.InferBody(t, sidecartest.CtlRequest("multi", "m", sidecartest.CtlBatch), true)
			for k, v := range header {
				hdr[k] = v
			}
			header = hdr
		}
		resp, _ := sidecartest.HTTPDo(t, http.MethodPost, h.HTTPURL+"/v2/models/multi/infer", body, header)
		return resp.StatusCode
	}

	grpcInfer(nil, true)                                                             // default: pinned
	grpcInfer(nil, true)                                                             // default: pinned
	grpcInfer(metadata.Pairs("react-preference", "b=1"), true)                       // header: miss
	grpcInfer(metadata.Pairs("react-preference", "b=2.0"), true)                     // header, same canonical: hit
	grpcInfer(metadata.Pairs("react-preference", "a=1.0"), true)                     // header, the default's W_p: pinned
	grpcInfer(metadata.Pairs("react-preference", "b=1,c=1"), true)                   // header: miss
	grpcInfer(metadata.Pairs("react-preference", "b=1,c=1"), true)                   // header: hit
	grpcInfer(metadata.Pairs("react-preference", "q=1"), false)                      // INVALID_ARGUMENT
	grpcInfer(metadata.Pairs("react-preference", "none"), true)                      // header: no lookup
	if c := httpInfer(map[string]string{"React-Preset": "b_first"}, nil); c != 200 { // preset: pinned
		t.Fatalf("HTTP preset: %d", c)
	}
	if c := httpInfer(nil, []byte("{garbage")); c != 500 { // Triton's answer to JSON it cannot parse
		t.Fatalf("HTTP garbage: %d", c)
	}
	ok := 9 // successful requests

	fams := sidecartest.Scrape(t, h.Metrics.Handler())
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"react_requests_total", map[string]string{"model": "multi", "protocol": "grpc", "source": "default"}, 2},
		{"react_requests_total", map[string]string{"model": "multi", "protocol": "grpc", "source": "header"}, 6},
		{"react_requests_total", map[string]string{"model": "multi", "protocol": "http", "source": "preset"}, 1},
		{"react_request_errors_total", map[string]string{"model": "multi", "protocol": "grpc", "code": "InvalidArgument"}, 1},
		{"react_request_duration_seconds", map[string]string{"model": "multi", "stage": "backbone"}, float64(ok)},
		{"react_request_duration_seconds", map[string]string{"model": "multi", "stage": "correction"}, float64(ok)},
		{"react_request_duration_seconds", map[string]string{"model": "multi", "stage": "heads"}, float64(ok)},
		{"react_request_duration_seconds", map[string]string{"model": "multi", "stage": "total"}, float64(ok)},
		{"react_corrected_rows_total", map[string]string{"model": "multi"}, float64(4 * ok)},
		{"react_wp_cache_lookups_total", map[string]string{"components": "zoo", "result": "pinned"}, 4},
		{"react_wp_cache_lookups_total", map[string]string{"components": "zoo", "result": "miss"}, 2},
		{"react_wp_cache_lookups_total", map[string]string{"components": "zoo", "result": "hit"}, 2},
		{"react_wp_cache_entries", nil, 2},
		{"react_wp_solve_duration_seconds", map[string]string{"components": "zoo"}, 2 + 2}, // default and preset at load, two misses
		{"react_rejected_requests_total", map[string]string{"protocol": "http", "reason": "malformed"}, 1},
		{"react_config_last_reload_successful", nil, 1},
		{"react_build_info", nil, 1},
	}
	for _, c := range checks {
		got, found := sidecartest.MetricValue(fams, c.name, c.labels)
		if !found || got != c.want {
			t.Errorf("%s%v = %v (found %v), want %v", c.name, c.labels, got, found, c.want)
		}
	}
	for name, f := range fams {
		if !strings.HasPrefix(name, "react_") {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, lp := range m.GetLabel() {
				if strings.ContainsAny(lp.GetValue(), "=,") {
					t.Errorf("%s has a label %s=%q that looks like a preference", name, lp.GetName(), lp.GetValue())
				}
			}
		}
	}
}
