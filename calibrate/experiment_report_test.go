package calibrate

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pages are the recorded metrics pages (decide/testdata/README.md).
func page(name string) string { return filepath.Join("decide", "testdata", name) }

// TestExperimentReportGolden: the report of the recorded pages, as text
// and JSON.
func TestExperimentReportGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"labels", []string{"--experiment", "fashion-ab", "--arms", "merged=50,react=50", "--metrics", page("sidecar-0.txt"), "--metrics", page("sidecar-1.txt")}},
		{"labels_json", []string{"--experiment", "fashion-ab", "--model", "fashion_ab", "--task", "fashion", "--arms", "merged=50,react=50",
			"--metrics", page("sidecar-0.txt"), "--metrics", page("sidecar-1.txt"), "--format", "json"}},
		{"rewards", []string{"--experiment", "homepage", "--arms", "A=1,B=1,C=1", "--alpha", "0.1", "--metrics", page("sidecar-0.txt"), "--metrics", page("sidecar-1.txt")}},
		{"mismatch", []string{"--experiment", "fashion-ab", "--arms", "merged=50,react=50", "--metrics", page("mismatch.txt")}},
		{"early", []string{"--experiment", "fashion-ab", "--arms", "merged=50,react=50,spare=0", "--control", "react", "--metrics", page("early.txt")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mustRun(t, append([]string{"experiment", "report"}, tc.args...)...)
			ext := ".txt"
			if strings.HasSuffix(tc.name, "json") {
				ext = ".json"
				var v map[string]any
				if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
					t.Fatalf("not JSON: %v\n%s", err, r.stdout)
				}
			}
			golden(t, filepath.Join("report", tc.name+ext), []byte(r.stdout))
		})
	}
}

// servePage serves a recorded page at /metrics.
func servePage(t *testing.T, name string) *httptest.Server {
	t.Helper()
	b, err := os.ReadFile(page(name))
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		w.Write(b)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestExperimentReportHTTP: the same report from two replicas' /metrics
// over HTTP, and from a Prometheus API that answers the sums, with the
// arms from a sidecar configuration.
func TestExperimentReportHTTP(t *testing.T) {
	a, b := servePage(t, "sidecar-0.txt"), servePage(t, "sidecar-1.txt")
	want, err := os.ReadFile(filepath.Join("testdata", "report", "labels.txt"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := sidecarConfig(t)
	r := mustRun(t, "experiment", "report", "--experiment", "fashion-ab", "--sidecar-config", cfg, "--metrics", a.URL+"/metrics", "--metrics", b.URL+"/metrics")
	if r.stdout != string(want) {
		t.Errorf("over HTTP:\n%s\nwant (testdata/report/labels.txt):\n%s", r.stdout, want)
	}

	prom := http.NewServeMux()
	answers := map[string]string{
		"react_experiment_outcomes_total":              `[{"metric":{"arm":"merged","kind":"label"},"value":[1,"1210"]},{"metric":{"arm":"react","kind":"label"},"value":[1,"1190"]}]`,
		"react_experiment_outcome_score_total":         `[{"metric":{"arm":"merged","kind":"label"},"value":[1,"862"]},{"metric":{"arm":"react","kind":"label"},"value":[1,"914"]}]`,
		"react_experiment_outcome_score_squares_total": `[{"metric":{"arm":"merged","kind":"label"},"value":[1,"862"]},{"metric":{"arm":"react","kind":"label"},"value":[1,"914"]}]`,
	}
	prom.HandleFunc("GET /api/v1/query", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query().Get("query")
		for name, result := range answers {
			if q == "sum by (arm, kind) ("+name+`{experiment="fashion-ab",model="fashion_ab"})` {
				w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":` + result + `}}`))
				return
			}
		}
		http.Error(w, `{"status":"error","errorType":"bad_data","error":"unexpected"}`, http.StatusBadRequest)
	})
	ps := httptest.NewServer(prom)
	defer ps.Close()
	r = mustRun(t, "experiment", "report", "--experiment", "fashion-ab", "--model", "fashion_ab", "--sidecar-config", cfg, "--prometheus", ps.URL)
	// The same but the first line: one source, one model.
	if first := "experiment fashion-ab, model fashion_ab: labels, from 1 source\n"; !strings.HasPrefix(r.stdout, first) ||
		r.stdout[len(first):] != string(want[strings.IndexByte(string(want), '\n')+1:]) {
		t.Errorf("from Prometheus:\n%s\nwant (testdata/report/labels.txt, for model fashion_ab):\n%s", r.stdout, want)
	}
}

// sidecarConfig writes a sidecar configuration with experiment fashion-ab
// (arms merged and react, 50/50, model fashion_ab) and returns its path.
func sidecarConfig(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "components.safetensors"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "sidecar.yaml")
	if err := os.WriteFile(cfg, []byte(`triton: {grpc: "127.0.0.1:8101", http: "127.0.0.1:8100"}
components: [{name: c, path: components.safetensors}]
models: [{name: fashion_ab, backbone: {model: b, output: f}, heads: [{task: fashion, model: h}]}]
experiments:
  - name: fashion-ab
    models: [fashion_ab]
    key: {header: x-user-id}
    arms:
      - {name: merged, weight: 50, preference: none}
      - {name: react, weight: 50, preference: fashion=1}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestExperimentReportProblems: bad input, every problem at once.
func TestExperimentReportProblems(t *testing.T) {
	cfg := sidecarConfig(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + l.Addr().String() + "/metrics"
	l.Close()
	malformed := filepath.Join(t.TempDir(), "malformed.txt")
	if err := os.WriteFile(malformed, []byte("react_experiment_outcomes_total{arm=\"A\"} three\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"usage, all at once", []string{"--experiment", "e", "--format", "yaml", "--alpha", "1.5", "--outcome", "clicks", "--timeout", "0s"}, ExitUsage, []string{
			"give the arms: --sidecar-config FILE or --arms", "give the outcomes' source", `--format: "yaml": want text or json`,
			"--timeout: want a positive duration", `--outcome: "clicks": want label or reward`, "alpha 1.5: want a number in (0, 1)"}},
		{"no experiment", []string{"--arms", "a=1,b=1", "--metrics", "x"}, ExitUsage, []string{"--experiment required"}},
		{"both", []string{"--experiment", "e", "--arms", "a=1,b=1", "--sidecar-config", cfg, "--metrics", "x", "--prometheus", "http://p"}, ExitUsage,
			[]string{"give --sidecar-config or --arms, not both", "give --metrics or --prometheus, not both"}},
		{"bad arms, a task with rewards", []string{"--experiment", "e", "--arms", "a", "--metrics", "x", "--outcome", "reward", "--task", "t"}, ExitUsage,
			[]string{`--arms: arms "a"`, "--task: a reward has no task"}},
		{"prometheus not an address", []string{"--experiment", "e", "--arms", "a=1,b=1", "--prometheus", "prom:9090"}, ExitUsage,
			[]string{`--prometheus: "prom:9090": want an http:// or https:// address`}},
		{"unknown experiment, unreachable, malformed, missing", []string{"--experiment", "nope", "--sidecar-config", cfg,
			"--metrics", down, "--metrics", malformed, "--metrics", page("sidecar-0.txt"), "--metrics", "absent.txt"}, ExitFailure, []string{
			"experiment report: 4 problems:",
			"\n  " + cfg + ` has no experiment "nope" (experiments: fashion-ab)`,
			down + ": unreachable: dial tcp",
			malformed + ": not a metrics page in Prometheus' text format: line 1:",
			"absent.txt: open absent.txt: no such file or directory"}},
		{"a model not in the experiment", []string{"--experiment", "fashion-ab", "--model", "other", "--sidecar-config", cfg, "--metrics", page("sidecar-0.txt")}, ExitFailure,
			[]string{`experiment fashion-ab has no model "other" (its models: fashion_ab)`}},
		{"no outcomes of the experiment", []string{"--experiment", "nope", "--arms", "a=1,b=1", "--metrics", page("sidecar-0.txt")}, ExitFailure,
			[]string{"experiment: no outcomes of experiment nope in the sources (experiments with outcomes there: fashion-ab, homepage)"}},
		{"no outcomes of the arms", []string{"--experiment", "fashion-ab", "--arms", "a=1,b=1", "--metrics", page("sidecar-0.txt")}, ExitFailure,
			[]string{"arms: no outcomes of any arm of experiment fashion-ab in the sources (its arms there: merged, react)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, append([]string{"experiment", "report"}, tc.args...)...)
			if r.code != tc.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", r.code, tc.code, r.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr:\n%s\nwant %q in it", r.stderr, w)
				}
			}
			if r.stdout != "" {
				t.Errorf("a report with problems: %s", r.stdout)
			}
		})
	}
}

// TestExperimentReportArmWithoutData: an arm of the configuration without
// outcomes is reported and noted, and its weight makes a mismatch.
func TestExperimentReportArmWithoutData(t *testing.T) {
	r := mustRun(t, "experiment", "report", "--experiment", "fashion-ab", "--arms", "merged=50,react=50,ghost=50",
		"--metrics", page("sidecar-0.txt"), "--metrics", page("sidecar-1.txt"))
	for _, w := range []string{
		"ghost   50      0         800.0     -       -                      -          -                      1        no outcomes yet",
		"no outcomes yet",
		"decision: sample ratio mismatch: do not trust",
		"note: arm ghost has no label outcomes yet",
	} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("report:\n%s\nwant %q in it", r.stdout, w)
		}
	}
}
