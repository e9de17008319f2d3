package controllable_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/mergectl/react-triton/experiment"
	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/internal/sidecartest"
)

// experimentYAML is an experiment over the multi model: arms plain (no
// correction) and bheavy (preset b_first), with the given weights.
func experimentYAML(plain, bheavy int) string {
	return `experiments:
  - name: ab
    models: [multi]
    key: {header: x-user-id, parameter: user_id}
    arms:
      - {name: plain, weight: ` + strconv.Itoa(plain) + `, preference: none}
      - {name: bheavy, weight: ` + strconv.Itoa(bheavy) + `, preset: b_first}
`
}

func abSplit(t *testing.T, plain, bheavy int) func(string) string {
	t.Helper()
	s, err := experiment.NewSplit("ab", []experiment.Arm{{Name: "plain", Weight: plain}, {Name: "bheavy", Weight: bheavy}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	return func(key string) string { return s.Arms()[s.Assign(key)].Name }
}

// TestModelsExperiment sends keyed, keyless and overriding requests over
// gRPC and HTTP: each keyed one gets its arm (echoed in react-arm), the
// logits of the arm's preference, and the per-arm metrics count them; then
// a reload with new weights moves the keys the new split says.
func TestModelsExperiment(t *testing.T) {
	h := sidecartest.StartHarness(t, func(c *sidecartest.CtlConfig) { c.Experiments = experimentYAML(1, 1) })
	armOf := abSplit(t, 1, 1)
	prefOf := map[string][]float64{"plain": nil, "bheavy": {0.2, 0.8, 0}}
	counts := map[string]int{}

	grpcInfer := func(md metadata.MD) (arm, pref string) {
		t.Helper()
		var hdr metadata.MD
		ctx := metadata.NewOutgoingContext(context.Background(), md)
		resp, err := h.Client.ModelInfer(ctx, sidecartest.CtlRequest("multi", "m", sidecartest.CtlBatch), grpc.Header(&hdr))
		if err != nil {
			t.Fatal(err)
		}
		arm = resp.GetParameters()["react-arm"].GetStringParam()
		if got := hdr.Get("react-arm"); (arm == "" && len(got) != 0) || (arm != "" && (len(got) != 1 || got[0] != arm)) {
			t.Errorf("react-arm header %v, parameter %q", got, arm)
		}
		if arm != "" {
			if err := sidecartest.CheckLogits(h.Scenario, "b", prefOf[arm], sidecartest.CtlBatch, resp.GetRawOutputContents()[1]); err != nil {
				t.Errorf("arm %s: %v", arm, err)
			}
		}
		return arm, resp.GetParameters()["react-preference"].GetStringParam()
	}
	for i := range 20 {
		key := "user-" + strconv.Itoa(i)
		arm, _ := grpcInfer(metadata.Pairs("X-User-Id", key))
		if want := armOf(key); arm != want {
			t.Errorf("gRPC key %s: arm %q, want %q", key, arm, want)
		}
		counts[arm]++
	}
	for i := range 6 {
		key := "web-" + strconv.Itoa(i)
		body, hdr := sidecartest.InferBody(t, sidecartest.CtlRequest("multi", "m", sidecartest.CtlBatch), true)
		hdr["x-user-id"] = key
		resp, _ := sidecartest.HTTPDo(t, http.MethodPost, h.HTTPURL+"/v2/models/multi/infer", body, hdr)
		if got, want := resp.Header.Get("React-Arm"), armOf(key); resp.StatusCode != 200 || got != want {
			t.Errorf("HTTP key %s: %d, react-arm %q, want %q", key, resp.StatusCode, got, want)
		}
		counts[armOf(key)]++
	}
	keyless := 5
	for range keyless {
		if arm, _ := grpcInfer(nil); arm == "" {
			t.Error("a keyless request got no arm")
		}
	}
	if arm, pref := grpcInfer(metadata.Pairs("x-user-id", "user-1", "react-preference", "c=1")); arm != "" || pref != "c=1" {
		t.Errorf("override: arm %q, preference %q", arm, pref)
	}

	fams := sidecartest.Scrape(t, h.Metrics.Handler())
	total := 0.0
	for _, arm := range []string{"plain", "bheavy"} {
		got, _ := sidecartest.MetricValue(fams, "react_experiment_requests_total", map[string]string{"model": "multi", "experiment": "ab", "arm": arm, "assignment": "key"})
		if got != float64(counts[arm]) {
			t.Errorf("react_experiment_requests_total{arm=%s,assignment=key} = %v, want %d", arm, got, counts[arm])
		}
		random, _ := sidecartest.MetricValue(fams, "react_experiment_requests_total", map[string]string{"model": "multi", "experiment": "ab", "arm": arm, "assignment": "random"})
		total += random
		lat, _ := sidecartest.MetricValue(fams, "react_experiment_request_duration_seconds", map[string]string{"model": "multi", "experiment": "ab", "arm": arm})
		if lat != got+random {
			t.Errorf("latency of arm %s counts %v requests, want %v", arm, lat, got+random)
		}
		// Four rows per request, one prediction per row and head.
		for _, task := range sidecartest.CtlTasks {
			conf, _ := sidecartest.MetricValue(fams, "react_experiment_top1_confidence", map[string]string{"model": "multi", "experiment": "ab", "arm": arm, "task": task})
			if conf != 4*(got+random) {
				t.Errorf("top-1 confidence of arm %s, task %s counts %v rows, want %v", arm, task, conf, 4*(got+random))
			}
		}
	}
	if total != float64(keyless) {
		t.Errorf("keyless requests counted %v, want %d", total, keyless)
	}
	if got, _ := sidecartest.MetricValue(fams, "react_experiment_overrides_total", map[string]string{"model": "multi", "experiment": "ab"}); got != 1 {
		t.Errorf("overrides = %v, want 1", got)
	}

	// A reload with new weights: plain 1 → 3 moves the keys of the
	// boundary's new stretch, and only those.
	sidecartest.WriteFile(t, h.ConfigPath, func() string { c := h.Config; c.Experiments = experimentYAML(3, 1); return c.YAML() }())
	cfg, err := config.Load(h.ConfigPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Models.Reload(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	after := abSplit(t, 3, 1)
	moved := 0
	for i := range 20 {
		key := "user-" + strconv.Itoa(i)
		arm, _ := grpcInfer(metadata.Pairs("x-user-id", key))
		if want := after(key); arm != want {
			t.Errorf("after the reload, key %s: arm %q, want %q", key, arm, want)
		}
		if arm != armOf(key) {
			moved++
			if armOf(key) != "bheavy" || arm != "plain" {
				t.Errorf("key %s moved from %s to %s", key, armOf(key), arm)
			}
		}
	}
	t.Logf("%d of 20 keys moved from bheavy to plain", moved)
}

// TestModelsShadowWired: with experiments[].shadow.fraction 1 every
// request served with an arm is compared with the other arm after it is
// answered, and the sidecar's own /metrics serve the comparisons (rows per
// pair of arms and task; the counting itself is sidecar/pipeline's test).
func TestModelsShadowWired(t *testing.T) {
	shadowed := experimentYAML(1, 1) + "    shadow: {fraction: 1, max_concurrent: 64}\n"
	h := sidecartest.StartHarness(t, func(c *sidecartest.CtlConfig) { c.Experiments = shadowed })
	const n = 10
	for i := range n {
		ctx := metadata.NewOutgoingContext(context.Background(), metadata.Pairs("x-user-id", "user-"+strconv.Itoa(i)))
		if _, err := h.Client.ModelInfer(ctx, sidecartest.CtlRequest("multi", "m", sidecartest.CtlBatch)); err != nil {
			t.Fatal(err)
		}
	}
	want := float64(n * 4 * len(sidecartest.CtlTasks)) // four rows a request, every head
	var rows, skipped float64
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		fams := sidecartest.Scrape(t, h.Metrics.Handler())
		rows, skipped = 0, 0
		for _, pair := range [][2]string{{"plain", "bheavy"}, {"bheavy", "plain"}} {
			for _, task := range sidecartest.CtlTasks {
				v, _ := sidecartest.MetricValue(fams, "react_experiment_shadow_rows_total", map[string]string{"model": "multi", "experiment": "ab", "arm": pair[0], "other": pair[1], "task": task})
				rows += v
			}
		}
		for _, reason := range []string{"busy", "graph_form", "no_prediction", "no_matrix", "timeout", "stopped", "error"} {
			v, _ := sidecartest.MetricValue(fams, "react_experiment_shadow_skipped_total", map[string]string{"model": "multi", "experiment": "ab", "reason": reason})
			skipped += v
		}
		if rows+skipped*4*float64(len(sidecartest.CtlTasks)) >= want {
			break
		}
	}
	if rows != want || skipped != 0 {
		t.Errorf("shadow rows %v, skipped %v requests; want %v rows, none skipped", rows, skipped, want)
	}
}
