package sidecartest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mergectl/react-triton/experiment/feedback"
	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/controllable"
	"github.com/mergectl/react-triton/sidecar/frontdoor"
	"github.com/mergectl/react-triton/sidecar/internal/faketriton"
	"github.com/mergectl/react-triton/sidecar/metrics"
	"github.com/mergectl/react-triton/sidecar/outcomes"
	"github.com/mergectl/react-triton/sidecar/passthrough"
	"github.com/mergectl/react-triton/sidecar/server"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// The tests of the controllable models run the whole sidecar (Models, its
// gRPC and HTTP interceptors, the proxy) in front of an in-process fake
// Triton (package faketriton) serving a backbone (x [-1,3] FP32 → feature
// [-1,4]) and a linear head per task a, b and c, whose answers the tests
// compute on their own in float64.

// CtlTasks are the scenario's tasks.
var CtlTasks = []string{"a", "b", "c"}

// WaitFor polls cond until it holds or timeout passes, and fails the test
// with what.
func WaitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// SyncBuffer is a log sink safe for concurrent writes.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p to the buffer.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// CtlConfig are the knobs of the test configuration file.
type CtlConfig struct {
	// TritonGRPC and TritonHTTP are the fake Triton's addresses.
	TritonGRPC, TritonHTTP string
	Components             string // path, relative to the file's directory or absolute
	// DefaultPreference and Presets are the components entry's.
	DefaultPreference string
	Presets           map[string]string
	// MaxRequestBytes, CacheSize and StartupTimeout set
	// limits.max_request_bytes ("" is 64KiB), cache.size (at least 4) and
	// triton.startup_timeout ("" is 20s).
	MaxRequestBytes string
	CacheSize       int
	StartupTimeout  string
	// ForwardHeaders sets triton.forward_headers (nil keeps the default).
	ForwardHeaders []string
	// HeadTask overrides the task of models[0].heads[0] (single).
	HeadTask string
	// Backbone overrides the backbone model of both models.
	Backbone string
	// MetricsListen, LogFormat and LogLevel set listen.metrics, log.format
	// and log.level.
	MetricsListen, LogFormat, LogLevel string
	// MoreModels are more entries of the models section, YAML list items,
	// appended as they are.
	MoreModels string
	// Experiments is the experiments section, YAML, appended as is.
	Experiments string
	// Limits are more keys of the limits section, YAML lines indented by
	// two spaces; Admission is the admission section's keys, the same way.
	Limits, Admission string
	// CacheMaxBytes sets cache.max_bytes ("" keeps the default).
	CacheMaxBytes string
	// Sections is more YAML (top-level sections such as server:),
	// appended as is.
	Sections string
	// Clock, when not nil, is the feedback window's clock (it is not
	// written to the file).
	Clock func() time.Time
	// ConfigMap lays the files out as a Kubernetes ConfigMap volume does:
	// config.yaml and components.safetensors are symlinks through the
	// ..data symlink to a timestamped directory.
	ConfigMap bool
}

// YAML writes the configuration: models "single" (backbone → head_a) and
// "multi" (backbone → head_a, head_b, head_c, logits renamed logits_a,
// logits_b, logits_c), which shadows the fake's "multi" with another
// signature, on purpose.
func (c CtlConfig) YAML() string {
	var b strings.Builder
	fmt.Fprintf(&b, "triton:\n  grpc: %s\n  http: %s\n  timeout: 10s\n  startup_timeout: %s\n", c.TritonGRPC, c.TritonHTTP, or(c.StartupTimeout, "20s"))
	if c.ForwardHeaders != nil {
		fmt.Fprintf(&b, "  forward_headers: [%s]\n", strings.Join(c.ForwardHeaders, ", "))
	}
	fmt.Fprintf(&b, "listen:\n  grpc: 127.0.0.1:0\n  http: 127.0.0.1:0\n  metrics: %q\n", c.MetricsListen)
	fmt.Fprintf(&b, "limits:\n  max_request_bytes: %s\n  max_preference_length: 64\n", or(c.MaxRequestBytes, "64KiB"))
	b.WriteString(or(c.Limits, "  max_inputs: 8\n  max_outputs: 8\n  max_parameters: 8\n"))
	fmt.Fprintf(&b, "cache:\n  size: %d\n", max(c.CacheSize, 4))
	if c.CacheMaxBytes != "" {
		fmt.Fprintf(&b, "  max_bytes: %s\n", c.CacheMaxBytes)
	}
	if c.Admission != "" {
		fmt.Fprintf(&b, "admission:\n%s", c.Admission)
	}
	fmt.Fprintf(&b, "log:\n  level: %s\n  format: %s\n", or(c.LogLevel, "debug"), or(c.LogFormat, "text"))
	fmt.Fprintf(&b, "components:\n  - name: zoo\n    path: %s\n", c.Components)
	if c.DefaultPreference != "" {
		fmt.Fprintf(&b, "    default_preference: %q\n", c.DefaultPreference)
	}
	if len(c.Presets) > 0 {
		fmt.Fprintf(&b, "    presets:\n")
		names := make([]string, 0, len(c.Presets))
		for n := range c.Presets {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(&b, "      %s: %q\n", n, c.Presets[n])
		}
	}
	// Another backbone is a copy of the one the components were
	// calibrated on.
	calibratedOn := ""
	if c.Backbone != "" {
		calibratedOn = "\n    variant_of: backbone"
	}
	fmt.Fprintf(&b, `models:
  - name: single%[3]s
    backbone: {model: %[2]s, output: feature}
    heads:
      - {task: %[1]s, model: head_a}
  - name: multi
    signature: differs%[3]s
    backbone: {model: %[2]s, output: feature}
    heads:
      - {task: a, model: head_a, outputs: {logits: logits_a}}
      - {task: b, model: head_b, outputs: {logits: logits_b}}
      - {task: c, model: head_c, outputs: {logits: logits_c}}
`, or(c.HeadTask, "a"), or(c.Backbone, "backbone"), calibratedOn)
	b.WriteString(c.MoreModels)
	b.WriteString(c.Experiments)
	b.WriteString(c.Sections)
	return b.String()
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Harness is a sidecar in front of a fake Triton.
type Harness struct {
	// Scenario is the fake's models' linear algebra; Fake serves them.
	Scenario *faketriton.Scenario
	Fake     *faketriton.Server
	FakeHTTP string // the fake's HTTP address
	// Dir holds config.yaml (ConfigPath, written from Config) and
	// components.safetensors.
	Dir        string
	ConfigPath string
	Config     CtlConfig
	// Log is the sidecar's log, Metrics its metrics, Feedback its join
	// window's side (nil window when the configuration turns feedback
	// off), Models its controllable models, Server its listeners and
	// Client a client of its gRPC listener.
	Log      *SyncBuffer
	Metrics  *metrics.Metrics
	Feedback *outcomes.Feedback
	Models   *controllable.Models
	Server   *server.Server
	Client   tritonpb.GRPCInferenceServiceClient
	// HTTP is the sidecar's HTTP handler, for in-process requests; HTTPURL
	// the URL of its HTTP listener.
	HTTP    http.Handler
	HTTPURL string
}

// CtlModels are the fake's models: the scenario's backbone and heads, and
// a model named "multi" that the controllable model of that name shadows.
func CtlModels(sc *faketriton.Scenario) []*faketriton.Model {
	return []*faketriton.Model{
		sc.BackboneModel("backbone", "FP32"),
		sc.HeadModel("head_a", "a", "FP32"),
		sc.HeadModel("head_b", "b", "FP16"),
		sc.HeadModel("head_c", "c", "BF16"),
		sc.HeadModel("multi", "a", "FP32"), // the ensemble the controllable model replaces
	}
}

// NewHarness starts a fake Triton and a sidecar with the test
// configuration (edit may change it), without building the models: call
// start (or Models.Start) for that.
func NewHarness(t testing.TB, edit func(*CtlConfig)) *Harness {
	t.Helper()
	h := &Harness{Scenario: faketriton.NewScenario(7, 4, CtlTasks...), Dir: t.TempDir(), Log: &SyncBuffer{}}
	h.Fake = faketriton.Start(t, CtlModels(h.Scenario)...)
	hs := httptest.NewServer(h.Fake.HTTPHandler())
	t.Cleanup(hs.Close)
	h.FakeHTTP = hs.Listener.Addr().String()
	h.Config = CtlConfig{
		TritonGRPC: h.Fake.Addr, TritonHTTP: h.FakeHTTP, Components: "components.safetensors",
		DefaultPreference: "a=1", Presets: map[string]string{"b_first": "a=0.2,b=0.8"},
	}
	if edit != nil {
		edit(&h.Config)
	}
	h.ConfigPath = filepath.Join(h.Dir, "config.yaml")
	if h.Config.ConfigMap {
		data := filepath.Join(h.Dir, "..2026_01_01_00_00_00.000000001")
		if err := os.Mkdir(data, 0o755); err != nil {
			t.Fatal(err)
		}
		h.Scenario.WriteComponents(t, data, "components.safetensors")
		WriteFile(t, filepath.Join(data, "config.yaml"), h.Config.YAML())
		for _, link := range [][2]string{
			{filepath.Base(data), "..data"},
			{"..data/config.yaml", "config.yaml"},
			{"..data/components.safetensors", "components.safetensors"},
		} {
			if err := os.Symlink(link[0], filepath.Join(h.Dir, link[1])); err != nil {
				t.Fatal(err)
			}
		}
	} else {
		h.Scenario.WriteComponents(t, h.Dir, "components.safetensors")
		WriteFile(t, h.ConfigPath, h.Config.YAML())
	}
	cfg, err := config.Load(h.ConfigPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := server.DialTriton(cfg.Triton.GRPC, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.Metrics = metrics.New()
	logger := slog.New(slog.NewTextHandler(h.Log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if cfg.Feedback.Enabled {
		opt := cfg.Feedback.Options()
		opt.Now = h.Config.Clock
		w, err := feedback.NewWindow(opt)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Register(h.Metrics.Registerer()); err != nil {
			t.Fatal(err)
		}
		h.Feedback = outcomes.New(w, logger)
	} else {
		h.Feedback = outcomes.New(nil, logger)
	}
	if h.Models, err = controllable.NewModels(cfg, conn, h.Metrics, logger, controllable.WithFeedback(h.Feedback)); err != nil {
		t.Fatal(err)
	}
	// The tests read the repository index through the sidecar, as the zoo's
	// configuration allows.
	guard, err := frontdoor.NewManagement(config.Management{Allow: []string{"RepositoryIndex"}}, h.Metrics)
	if err != nil {
		t.Fatal(err)
	}
	h.Server = StartSidecar(t, server.Config{
		TritonGRPC: cfg.Triton.GRPC, TritonHTTP: cfg.Triton.HTTP, Conn: conn,
		InterceptGRPC: h.Models.GRPCInterceptor(), InterceptHTTP: h.Feedback.HTTPInterceptor(h.Models.HTTPInterceptor()),
		RegisterGRPC: h.Feedback.RegisterGRPC, Management: guard, Log: logger, Private: h.Models.PrivateKeys,
	})
	h.Client = tritonpb.NewGRPCInferenceServiceClient(Dial(t, h.Server.GRPCAddr().String()))
	if h.HTTP, err = passthrough.NewHTTPProxy(cfg.Triton.HTTP, nil, h.Feedback.HTTPInterceptor(h.Models.HTTPInterceptor()), h.Models.PrivateKeys, nil); err != nil {
		t.Fatal(err)
	}
	h.HTTPURL = "http://" + h.Server.HTTPAddr().String()
	return h
}

// StartHarness is NewHarness with the models built.
func StartHarness(t testing.TB, edit func(*CtlConfig)) *Harness {
	t.Helper()
	h := NewHarness(t, edit)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := h.Models.Start(ctx); err != nil {
		t.Fatalf("Start: %v\nlog:\n%s", err, h.Log.String())
	}
	return h
}

// WriteFile writes a file atomically (a temporary file renamed over it).
func WriteFile(t testing.TB, path, content string) {
	t.Helper()
	WriteBytes(t, path, []byte(content))
}

// WriteBytes writes a file atomically, as WriteFile does.
func WriteBytes(t testing.TB, path string, b []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// CtlBatch is the test input, rows of x (B×3).
var CtlBatch = []float64{
	1, 0, 0,
	0, 1, 0,
	0, 0, 1,
	0.5, -1.5, 2,
}

// CtlRequest returns a request for model on the batch x.
func CtlRequest(model, id string, x []float64, outputs ...string) *tritonpb.ModelInferRequest {
	req := &tritonpb.ModelInferRequest{
		ModelName:        model,
		Id:               id,
		Inputs:           []*tritonpb.ModelInferRequest_InferInputTensor{{Name: "x", Datatype: "FP32", Shape: []int64{int64(len(x) / 3), 3}}},
		RawInputContents: [][]byte{faketriton.Encode("FP32", x)},
	}
	for _, o := range outputs {
		req.Outputs = append(req.Outputs, &tritonpb.ModelInferRequest_InferRequestedOutputTensor{Name: o})
	}
	return req
}

// HeadRequest returns a request straight to a head of the fake (a
// pass-through model) on the feature rows f (B×4, FP32).
func HeadRequest(model, id string, f []float64) *tritonpb.ModelInferRequest {
	return &tritonpb.ModelInferRequest{
		ModelName:        model,
		Id:               id,
		Inputs:           []*tritonpb.ModelInferRequest_InferInputTensor{{Name: "feature", Datatype: "FP32", Shape: []int64{int64(len(f) / 4), 4}}},
		RawInputContents: [][]byte{faketriton.Encode("FP32", f)},
	}
}

// WantLogits computes the logits of the head of task for the batch x with
// the correction W_p(weights) (nil: none), in float64, as the head
// receives the feature in headDT; and the tolerance.
func WantLogits(sc *faketriton.Scenario, task, headDT string, weights []float64, x []float64) (want, tol []float64) {
	d := sc.D
	z := sc.Feature("FP32", x)
	var w [][]float64
	if weights != nil {
		w = sc.Reference(weights, sc.Beta, false)
	}
	h := sc.Head(task)
	e := map[string]float64{"FP32": 0, "FP16": 0x1p-11, "BF16": 0x1p-8}[headDT]
	for r := 0; r < len(z)/d; r++ {
		zhat := make([]float64, d)
		ztol := make([]float64, d)
		for i := 0; i < d; i++ {
			if w == nil {
				zhat[i] = z[r*d+i]
			} else {
				mag := 0.0
				for j := 0; j < d; j++ {
					zhat[i] += w[i][j] * z[r*d+j]
					mag += math.Abs(w[i][j] * z[r*d+j])
				}
				ztol[i] = 1e-5 * mag
			}
			ztol[i] += e*math.Abs(zhat[i]) + 1e-7
		}
		for i := range h {
			s, tl := 0.0, 1e-7
			for j := 0; j < d; j++ {
				s += h[i][j] * zhat[j]
				tl += math.Abs(h[i][j]) * (ztol[j] + 1e-5*math.Abs(zhat[j]))
			}
			want, tol = append(want, s), append(tol, tl)
		}
	}
	return want, tol
}

// HeadDT is the datatype each head of the fake takes the feature in.
var HeadDT = map[string]string{"a": "FP32", "b": "FP16", "c": "BF16"}

// CheckLogits compares raw FP32 logits with WantLogits.
func CheckLogits(sc *faketriton.Scenario, task string, weights []float64, x []float64, raw []byte) error {
	got, err := faketriton.Decode("FP32", raw)
	if err != nil {
		return err
	}
	want, tol := WantLogits(sc, task, HeadDT[task], weights, x)
	if len(got) != len(want) {
		return fmt.Errorf("logits of %s: %d values, want %d", task, len(got), len(want))
	}
	for i := range want {
		if !(math.Abs(got[i]-want[i]) <= tol[i]) {
			return fmt.Errorf("logits of %s (weights %v) = %v, want %v", task, weights, got, want)
		}
	}
	return nil
}

// Scrape reads the metrics, by family name.
func Scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return ParseMetrics(t, rec.Body)
}

// ParseMetrics parses a metrics page in the text format, by family name.
func ParseMetrics(t *testing.T, r io.Reader) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		t.Fatalf("parsing the metrics: %v", err)
	}
	return fams
}

// MetricValue returns the value of the series of family name whose labels
// include labels (a counter, gauge or untyped value; a histogram's count),
// and false when there is none.
func MetricValue(fams map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
	for _, m := range f.GetMetric() {
		match := 0
		for _, lp := range m.GetLabel() {
			if v, ok := labels[lp.GetName()]; ok && v == lp.GetValue() {
				match++
			}
		}
		if match != len(labels) {
			continue
		}
		switch {
		case m.GetCounter() != nil:
			return m.GetCounter().GetValue(), true
		case m.GetGauge() != nil:
			return m.GetGauge().GetValue(), true
		case m.GetHistogram() != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		case m.GetUntyped() != nil:
			return m.GetUntyped().GetValue(), true
		}
	}
	return 0, false
}
