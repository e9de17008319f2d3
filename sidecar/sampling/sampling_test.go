package sampling_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/mergectl/react-triton/livestats"
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/partialfile"
	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/internal/faketriton"
	"github.com/mergectl/react-triton/sidecar/internal/sidecartest"
	"github.com/mergectl/react-triton/sidecar/passthrough"
	"github.com/mergectl/react-triton/sidecar/sampling"
	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// rig is a sidecar in front of the fake Triton with live sampling wired
// as the command wires it: the fake also serves a pass-through model
// "classify" (x → logits) and the expert "expert_a" (x → feature, T x),
// and the sampling section maps classify to task a.
type rig struct {
	h    *sidecartest.Harness
	live *sampling.Sampler
	dir  string
	t    [][]float64 // the expert's map, D×3
}

// samplingYAML is the sampling section: extra is more keys, indented by
// two spaces.
func samplingYAML(dir string, enabled bool, extra string) string {
	return fmt.Sprintf(`sampling:
  enabled: %v
  fraction: 1
  replica: test-0
  max_concurrent: 16
%s  checkpoint: {dir: %s, interval: 1h, window: 24h}
  backbone: {model: backbone, output: feature}
  models:
    - {name: classify, task: a}
    - {name: single}
  tasks:
    - {name: a, expert: {model: expert_a}}
`, enabled, extra, dir)
}

func newRig(t *testing.T, enabled bool, extra string) *rig {
	t.Helper()
	dir := t.TempDir()
	h := sidecartest.NewHarness(t, func(c *sidecartest.CtlConfig) {
		c.Sections = samplingYAML(dir, enabled, extra)
		// The sidecar's own calls to Triton for HTTP requests carry the
		// headers listed: the opt-out headers of the tests too, so that
		// only sampling keeps them back.
		c.ForwardHeaders = []string{"authorization", "x-no-sample", "x-opt-a", "x-opt-b"}
	})
	rng := rand.New(rand.NewPCG(11, 3))
	tm := make([][]float64, h.Scenario.D)
	for i := range tm {
		tm[i] = []float64{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()}
	}
	h.Fake.Put(faketriton.Linear("expert_a", "x", "FP32", "feature", "FP32", tm, nil))
	h.Fake.Put(faketriton.Linear("classify", "x", "FP32", "logits", "FP32", [][]float64{{1, 2, 3}, {-1, 0, 0.5}}, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := h.Models.Start(ctx); err != nil {
		t.Fatalf("Start: %v\n%s", err, h.Log.String())
	}
	live := sampling.New(sidecartest.Dial(t, h.Fake.Addr), slog.New(slog.NewTextHandler(h.Log, nil)))
	if err := h.Metrics.Register(live); err != nil { // as the command does
		t.Fatal(err)
	}
	h.Models.SetSampler(live)
	if err := live.Configure(ctx, h.Models.Config()); err != nil {
		t.Fatalf("Configure: %v", err)
	}
	t.Cleanup(func() { live.Close(time.Second) })
	return &rig{h: h, live: live, dir: dir, t: tm}
}

// batch returns rows random rows of x, float32 values as the request
// carries them.
func batch(rng *rand.Rand, rows int) []float64 {
	x := make([]float64, rows*3)
	for i := range x {
		x[i] = float64(float32(2*rng.Float64() - 1))
	}
	return x
}

// sums is the float64 reference: S = Σ z_ind z_mtlᵀ, G = Σ z_mtl z_mtlᵀ,
// N and Σ ‖z_ind‖², over the rows as the fake computes them (float64,
// rounded to float32).
type sums struct {
	d     int
	n     int64
	s, g  []float64
	yy    float64
	mtl   func(x []float64) []float64
	ind   func(x []float64) []float64
	added int
}

func (r *rig) reference() *sums {
	sc := r.h.Scenario
	return newSums(sc.M, sc.Bias, r.t)
}

// newSums is the reference of a backbone x ↦ m x + bias and an expert
// x ↦ t x, both D×3.
func newSums(m [][]float64, bias []float64, t [][]float64) *sums {
	d := len(m)
	round := func(v []float64) []float64 {
		for i := range v {
			v[i] = float64(float32(v[i]))
		}
		return v
	}
	return &sums{d: d, s: make([]float64, d*d), g: make([]float64, d*d),
		mtl: func(x []float64) []float64 { return round(faketriton.Affine(m, bias, x)) },
		ind: func(x []float64) []float64 { return round(faketriton.Apply(t, x)) }}
}

func (s *sums) add(x []float64) {
	m, y := s.mtl(x), s.ind(x)
	d := s.d
	for r := 0; r < len(m)/d; r++ {
		zm, zi := m[r*d:(r+1)*d], y[r*d:(r+1)*d]
		for i := range d {
			s.yy += zi[i] * zi[i]
			for j := range d {
				s.s[i*d+j] += zi[i] * zm[j]
				s.g[i*d+j] += zm[i] * zm[j]
			}
		}
		s.n++
	}
	s.added++
}

// relErr is max |a − b| / max |b|.
func relErr(a, b []float64) float64 {
	num, den := 0.0, 0.0
	for i := range b {
		num = max(num, math.Abs(a[i]-b[i]))
		den = max(den, math.Abs(b[i]))
	}
	return num / den
}

func (r *rig) infer(t *testing.T, ctx context.Context, x []float64) *tritonpb.ModelInferResponse {
	t.Helper()
	resp, err := r.h.Client.ModelInfer(ctx, sidecartest.CtlRequest("classify", "", x, "logits"))
	if err != nil {
		t.Fatalf("classify: %v", err)
	}
	return resp
}

// checkFile compares the live file at path with the reference.
func checkFile(t *testing.T, path string, want *sums) {
	t.Helper()
	f, err := partialfile.Load(path)
	if err != nil {
		t.Fatalf("the live file: %v", err)
	}
	if len(f.Tasks) != 1 || f.Tasks[0].Name != "a" || f.Replica != "test-0" || f.Run != "live traffic" {
		t.Fatalf("file: replica %q, run %q, %d tasks", f.Replica, f.Run, len(f.Tasks))
	}
	acc := f.Tasks[0].Acc
	n, s, g := acc.State()
	yy, _ := acc.SumSquares()
	if n != want.n {
		t.Fatalf("N = %d, want %d", n, want.n)
	}
	d := want.d
	var gu, wu []float64 // the upper triangles of G
	for i := range d {
		for j := i; j < d; j++ {
			gu, wu = append(gu, g[i*d+j]), append(wu, want.g[i*d+j])
		}
	}
	for _, c := range []struct {
		what      string
		got, want []float64
	}{{"S", s, want.s}, {"G", gu, wu}, {"Σ‖z_ind‖²", []float64{yy}, []float64{want.yy}}} {
		if e := relErr(c.got, c.want); e > 1e-12 {
			t.Errorf("%s: relative error %.3g against the float64 reference (want ≤ 1e-12)", c.what, e)
		}
	}
}

// TestRelayedSampledSums: at fraction 1 every relayed request to a sampled
// model is run through the backbone and the expert after its response, and
// the file written at shutdown holds the sums of exactly those rows.
func TestRelayedSampledSums(t *testing.T) {
	r := newRig(t, true, "")
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 9))
	want := r.reference()
	for i := range 12 {
		x := batch(rng, 1+i%faketriton.MaxBatch)
		r.infer(t, ctx, x)
		want.add(x)
	}
	r.waitDecided(t, 12)
	if b, e := r.h.Fake.Calls("backbone"), r.h.Fake.Calls("expert_a"); b != 12 || e != 12 {
		t.Fatalf("backbone calls %d, expert calls %d: want 12 each, one per request", b, e)
	}
	fams := sidecartest.Scrape(t, r.h.Metrics.Handler())
	if v, _ := sidecartest.MetricValue(fams, "react_sampling_requests_total", map[string]string{"model": "classify", "task": "a"}); v != 12 {
		t.Errorf("react_sampling_requests_total = %v, want 12", v)
	}
	path := r.live.Path()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("a file before the first checkpoint (interval 1h): %v", err)
	}
	if err := r.live.Close(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	checkFile(t, path, want)
}

// inferHTTP sends x to model through the sidecar's HTTP listener, with
// the binary tensor extension or as JSON, and returns the status.
func (r *rig) inferHTTP(t *testing.T, model string, x []float64, binary bool, header map[string]string) int {
	t.Helper()
	body, hdr := sidecartest.InferBody(t, sidecartest.CtlRequest(model, "", x, "logits"), binary)
	maps.Copy(hdr, header)
	resp, b := sidecartest.HTTPDo(t, http.MethodPost, r.h.HTTPURL+"/v2/models/"+model+"/infer", body, hdr)
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("%s over HTTP: %d %s", model, resp.StatusCode, b)
	}
	return resp.StatusCode
}

// wait waits until no sample is in flight, failing the test after 10 s.
func (r *rig) wait(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.live.Wait(ctx); err != nil {
		t.Fatalf("samples still in flight: %v", err)
	}
}

// waitDecided waits until the sampler has decided on n requests (sampled,
// skipped for any reason, or in flight), then until no sample is in
// flight; it fails the test after 10 s. The sidecar offers a request to
// the sampler after its response is sent, so the client may have its
// answer before the sampler has seen the request: Wait alone would not
// wait for it.
func (r *rig) waitDecided(t *testing.T, n int) {
	t.Helper()
	decided := func() int {
		fams := sidecartest.Scrape(t, r.h.Metrics.Handler())
		sum := 0.0
		for _, name := range []string{livestats.MetricRequests, livestats.MetricSkipped, livestats.MetricInFlight} {
			for _, m := range fams[name].GetMetric() {
				sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
		return int(sum)
	}
	for start := time.Now(); decided() < n; time.Sleep(time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("the sampler decided on %d requests, want %d", decided(), n)
		}
	}
	r.wait(t)
}

// fileSums returns a live file's one task's N, S, G and Σ‖z_ind‖², and
// its held-out N, S and G.
func fileSums(t *testing.T, path string) [][]float64 {
	t.Helper()
	f, err := partialfile.Load(path)
	if err != nil {
		t.Fatalf("the live file: %v", err)
	}
	if len(f.Tasks) != 1 {
		t.Fatalf("%s: %d tasks, want 1", path, len(f.Tasks))
	}
	n, s, g := f.Tasks[0].Acc.State()
	yy, _ := f.Tasks[0].Acc.SumSquares()
	hn, hs, hg := f.Tasks[0].Held.State()
	return [][]float64{{float64(n), yy, float64(hn)}, s, g, hs, hg}
}

// TestHTTPSampledSumsEqualGRPC: the same batches sent over HTTP (the
// binary tensor extension and JSON in turn) to the pass-through model and
// to the controllable one are sampled as over gRPC: one rig driven over
// HTTP, another over gRPC, write files whose sums are the same bits, and
// equal the float64 reference. A request Triton refuses (400) is not
// sampled, nor counted.
func TestHTTPSampledSumsEqualGRPC(t *testing.T) {
	ctx := context.Background()
	var xs [][]float64
	rng := rand.New(rand.NewPCG(4, 4))
	for i := range 10 {
		xs = append(xs, batch(rng, 1+i%faketriton.MaxBatch))
	}
	models := func(i int) string { return []string{"classify", "single"}[i%2] }
	paths := map[string]string{}
	want := map[string]*sums{}
	for _, protocol := range []string{"http", "grpc"} {
		r := newRig(t, true, "")
		want[protocol] = r.reference()
		for i, x := range xs {
			if protocol == "http" {
				if code := r.inferHTTP(t, models(i), x, i%4 < 2, nil); code != http.StatusOK {
					t.Fatalf("request %d over HTTP: %d", i, code)
				}
			} else if _, err := r.h.Client.ModelInfer(ctx, sidecartest.CtlRequest(models(i), "", x, "logits")); err != nil {
				t.Fatal(err)
			}
			want[protocol].add(x)
			// Each sample added before the next request: the sums are
			// added in the same order on both sides.
			r.waitDecided(t, i+1)
		}
		if protocol == "http" {
			// Triton refuses it (an input the model does not have): not sampled.
			req := sidecartest.CtlRequest("classify", "", xs[0], "logits")
			req.Inputs[0].Name = "y"
			body, hdr := sidecartest.InferBody(t, req, false)
			if resp, b := sidecartest.HTTPDo(t, http.MethodPost, r.h.HTTPURL+"/v2/models/classify/infer", body, hdr); resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("a request with input y: %d %s, want Triton's 400", resp.StatusCode, b)
			}
		}
		r.wait(t)
		// One backbone call per request (the controllable model's own,
		// reused by its sample, or the sample's), one expert call per request.
		if b, e := r.h.Fake.Calls("backbone"), r.h.Fake.Calls("expert_a"); b != len(xs) || e != len(xs) {
			t.Fatalf("%s: backbone calls %d, expert calls %d: want %d each", protocol, b, e, len(xs))
		}
		fams := sidecartest.Scrape(t, r.h.Metrics.Handler())
		for _, m := range []string{"classify", "single"} {
			if v, _ := sidecartest.MetricValue(fams, "react_sampling_requests_total", map[string]string{"model": m, "task": "a"}); v != float64(len(xs)/2) {
				t.Errorf("%s: react_sampling_requests_total{%s} = %v, want %d", protocol, m, v, len(xs)/2)
			}
		}
		paths[protocol] = r.live.Path()
		if err := r.live.Close(5 * time.Second); err != nil {
			t.Fatal(err)
		}
		checkFile(t, paths[protocol], want[protocol])
	}
	got, ref := fileSums(t, paths["http"]), fileSums(t, paths["grpc"])
	for k, what := range []string{"N, Σ‖z_ind‖², held-out N", "S", "G", "held-out S", "held-out G"} {
		if !slices.Equal(got[k], ref[k]) {
			t.Errorf("%s over HTTP differ from gRPC's (want the same bits)", what)
		}
	}
}

// TestOptOutHTTP: an HTTP request carrying the opt-out header is answered,
// not sampled (counted as opt_out), and the header does not reach Triton;
// the same request without it is sampled.
func TestOptOutHTTP(t *testing.T) {
	r := newRig(t, true, "  opt_out_header: x-no-sample\n")
	x := batch(rand.New(rand.NewPCG(2, 3)), 2)
	r.inferHTTP(t, "classify", x, true, map[string]string{"X-No-Sample": "", "X-Other": "kept"})
	r.waitDecided(t, 1)
	if b, e := r.h.Fake.Calls("backbone"), r.h.Fake.Calls("expert_a"); b != 0 || e != 0 {
		t.Fatalf("opted out, yet backbone calls %d, expert calls %d", b, e)
	}
	if h := r.h.Fake.LastHTTPHeader(); h.Get("X-Other") != "kept" || len(h.Values("X-No-Sample")) != 0 {
		t.Errorf("headers reaching Triton: %v: want X-Other, not the opt-out header", h)
	}
	fams := sidecartest.Scrape(t, r.h.Metrics.Handler())
	if v, _ := sidecartest.MetricValue(fams, "react_sampling_skipped_total", map[string]string{"model": "classify", "task": "a", "reason": "opt_out"}); v != 1 {
		t.Errorf("skipped{opt_out} = %v, want 1", v)
	}
	r.inferHTTP(t, "classify", x, false, nil)
	r.waitDecided(t, 2)
	if b := r.h.Fake.Calls("backbone"); b != 1 {
		t.Errorf("backbone calls %d after a request without the header, want 1", b)
	}
}

// TestControllableReusesFeature: a sampled request to a controllable model
// reuses the backbone's feature the pipeline computed (one backbone call
// per request, the pipeline's), calls the expert once, and its rows'
// sums are the reference's.
func TestControllableReusesFeature(t *testing.T) {
	r := newRig(t, true, "")
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(6, 1))
	want := r.reference()
	for i := range 5 {
		x := batch(rng, 1+i)
		if _, err := r.h.Client.ModelInfer(ctx, sidecartest.CtlRequest("single", "", x, "logits")); err != nil {
			t.Fatal(err)
		}
		want.add(x)
	}
	r.waitDecided(t, 5)
	if b, e := r.h.Fake.Calls("backbone"), r.h.Fake.Calls("expert_a"); b != 5 || e != 5 {
		t.Fatalf("backbone calls %d, expert calls %d: want 5 each (the feature reused)", b, e)
	}
	fams := sidecartest.Scrape(t, r.h.Metrics.Handler())
	if v, _ := sidecartest.MetricValue(fams, "react_sampling_requests_total", map[string]string{"model": "single", "task": "a"}); v != 5 {
		t.Errorf("react_sampling_requests_total{single} = %v, want 5", v)
	}
	path := r.live.Path()
	if err := r.live.Close(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	checkFile(t, path, want)
}

// TestShutdownWaitsForSamples: a sample still in flight at shutdown (its
// expert held by Triton) finishes, and its rows are in the final
// checkpoint.
func TestShutdownWaitsForSamples(t *testing.T) {
	r := newRig(t, true, "")
	want := r.reference()
	x := batch(rand.New(rand.NewPCG(1, 2)), 3)
	release := r.h.Fake.Hold("expert_a")
	r.infer(t, context.Background(), x) // answered: the sample waits on the expert
	want.add(x)
	path := r.live.Path()
	go func() {
		time.Sleep(100 * time.Millisecond)
		release()
	}()
	if err := r.live.Close(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	checkFile(t, path, want)
}

// TestOptOut: a request carrying the opt-out header is answered, not
// sampled (no backbone or expert call, counted as opt_out), and the header
// does not reach Triton, also when it is not a react-* key; a header
// configured in mixed case matches the lower-case key gRPC metadata has.
func TestOptOut(t *testing.T) {
	for _, header := range []string{"x-no-sample", "X-No-Sample"} {
		t.Run(header, func(t *testing.T) {
			r := newRig(t, true, "  opt_out_header: "+header+"\n")
			x := batch(rand.New(rand.NewPCG(1, 3)), 2)
			ctx := metadata.AppendToOutgoingContext(context.Background(), "x-no-sample", "", "x-other", "kept")
			r.infer(t, ctx, x)
			r.waitDecided(t, 1)
			if b, e := r.h.Fake.Calls("backbone"), r.h.Fake.Calls("expert_a"); b != 0 || e != 0 {
				t.Fatalf("opted out, yet backbone calls %d, expert calls %d", b, e)
			}
			md := r.h.Fake.LastMetadata("classify")
			if _, ok := md["x-no-sample"]; ok || len(md["x-other"]) == 0 {
				t.Errorf("metadata reaching Triton: %v: want x-other, not the opt-out header", md)
			}
			fams := sidecartest.Scrape(t, r.h.Metrics.Handler())
			if v, _ := sidecartest.MetricValue(fams, "react_sampling_skipped_total", map[string]string{"model": "classify", "task": "a", "reason": "opt_out"}); v != 1 {
				t.Errorf("skipped{opt_out} = %v, want 1", v)
			}
			// Without the header, the same request is sampled.
			r.infer(t, context.Background(), x)
			r.waitDecided(t, 2)
			if b := r.h.Fake.Calls("backbone"); b != 1 {
				t.Errorf("backbone calls %d after a request without the header, want 1", b)
			}
		})
	}
}

// reload applies cfg as the sidecar's reloader does: the controllable
// models, then the sampling section.
func (r *rig) reload(t *testing.T, cfg *config.Config) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := r.h.Models.Reload(ctx, cfg); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if err := r.live.Configure(ctx, cfg); err != nil {
		t.Fatalf("Configure: %v", err)
	}
}

// TestOptOutFollowsReload: the opt-out header stays with the sidecar while
// the configuration in service samples, and reaches Triton again once a
// reload turns sampling off, on every path a client's metadata takes to
// Triton (seenOptOut). A reload turning it on keeps it back again.
func TestOptOutFollowsReload(t *testing.T) {
	const extra = "  opt_out_header: X-No-Sample\n"
	r := newRig(t, true, extra)
	x := batch(rand.New(rand.NewPCG(1, 6)), 2)
	for i, on := range []bool{true, false, true} {
		if i > 0 {
			r.reload(t, sidecartest.LoadConfig(t, r.h.Dir, fmt.Sprintf("reload-%d.yaml", i), withSections(r.h.Config, samplingYAML(r.dir, on, extra))))
		}
		for path, reached := range r.seenOptOut(t, "X-No-Sample", x) {
			if reached == on {
				t.Errorf("sampling %v (step %d): %s: the opt-out header reached Triton %v, want %v", on, i, path, reached, !on)
			}
		}
	}
}

// seenOptOut sends header, with a value, on each path by which a client's
// metadata reaches Triton, and reports by path whether Triton saw it: gRPC
// relayed, gRPC served by a controllable model, both on a stream, the
// statistics and repository index the sidecar asks Triton for on a
// client's behalf (over both protocols), and HTTP relayed and served. x is a batch of the
// models' input.
func (r *rig) seenOptOut(t *testing.T, header string, x []float64) map[string]bool {
	t.Helper()
	key := strings.ToLower(header)
	has := func(md metadata.MD) bool { _, ok := md[key]; return ok }
	got := map[string]bool{}
	ctx := metadata.AppendToOutgoingContext(context.Background(), key, "1")
	r.infer(t, ctx, x)
	got["gRPC relayed"] = has(r.h.Fake.LastMetadata("classify"))
	if _, err := r.h.Client.ModelInfer(ctx, sidecartest.CtlRequest("single", "", x, "logits")); err != nil {
		t.Fatal(err)
	}
	got["gRPC served"] = has(r.h.Fake.LastMetadata("backbone"))

	stream, err := r.h.Client.ModelStreamInfer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, model, called string }{
		{"gRPC stream, served", "single", "backbone"},
		{"gRPC stream, relayed", "classify", "classify"},
	} {
		if err := stream.Send(sidecartest.CtlRequest(c.model, "", x, "logits")); err != nil {
			t.Fatal(err)
		}
		if resp, err := stream.Recv(); err != nil || resp.GetErrorMessage() != "" {
			t.Fatalf("%s: %v, %v", c.path, resp.GetErrorMessage(), err)
		}
		got[c.path] = has(r.h.Fake.LastMetadata(c.called))
	}
	stream.CloseSend()
	if _, err := stream.Recv(); err != io.EOF {
		t.Fatalf("the stream's end: %v", err)
	}

	if _, err := r.h.Client.ModelStatistics(ctx, &tritonpb.ModelStatisticsRequest{}); err != nil {
		t.Fatal(err)
	}
	got["gRPC statistics"] = has(r.h.Fake.StatisticsMetadata())
	if _, err := r.h.Client.RepositoryIndex(ctx, &tritonpb.RepositoryIndexRequest{}); err != nil {
		t.Fatal(err)
	}
	got["gRPC repository index"] = has(r.h.Fake.IndexMetadata())

	for _, c := range []struct{ path, model string }{{"HTTP relayed", "classify"}, {"HTTP served", "single"}} {
		body, hdr := sidecartest.InferBody(t, sidecartest.CtlRequest(c.model, "h", x), true)
		hdr[header] = "1"
		if resp, out := sidecartest.HTTPDo(t, http.MethodPost, r.h.HTTPURL+"/v2/models/"+c.model+"/infer", body, hdr); resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", c.path, resp.StatusCode, out)
		}
	}
	_, got["HTTP relayed"] = r.h.Fake.LastHTTPHeader()[http.CanonicalHeaderKey(header)]
	got["HTTP served"] = has(r.h.Fake.LastMetadata("backbone"))
	if resp, out := sidecartest.HTTPDo(t, http.MethodGet, r.h.HTTPURL+"/v2/models/stats", nil, map[string]string{header: "1"}); resp.StatusCode != http.StatusOK {
		t.Fatalf("HTTP statistics: %d %s", resp.StatusCode, out)
	}
	got["HTTP statistics"] = has(r.h.Fake.StatisticsMetadata())
	r.live.Wait(context.Background())
	return got
}

// TestOptOutOfTheSamplerInService: the opt-out header of the sampler in
// service stays with the sidecar too, beside the configuration's, until a
// sampler of the new configuration serves: after a reload whose sampling
// section is not configured yet, or failed to be (Triton's answers did not
// come in time), the old sampler still honours its own header.
func TestOptOutOfTheSamplerInService(t *testing.T) {
	r := newRig(t, true, "  opt_out_header: X-Opt-A\n")
	x := batch(rand.New(rand.NewPCG(1, 8)), 2)
	cfg := sidecartest.LoadConfig(t, r.h.Dir, "reload-b.yaml", withSections(r.h.Config, samplingYAML(r.dir, true, "  opt_out_header: X-Opt-B\n")))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := r.h.Models.Reload(ctx, cfg); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	expired, stop := context.WithCancel(ctx)
	stop()
	if err := r.live.Configure(expired, cfg); err == nil {
		t.Fatal("Configure with its time up: no error")
	}
	optedOut := func() float64 {
		v, _ := sidecartest.MetricValue(sidecartest.Scrape(t, r.h.Metrics.Handler()), "react_sampling_skipped_total",
			map[string]string{"model": "classify", "task": "a", "reason": "opt_out"})
		return v
	}
	check := func(step string, held map[string]bool) {
		t.Helper()
		for header, want := range held {
			before := optedOut()
			for path, reached := range r.seenOptOut(t, header, x) {
				// The served paths read the backbone's last call, which a
				// sample of a request not opted out may have made since.
				if reached == want && !strings.Contains(path, "served") {
					t.Errorf("%s: %s: %s reached Triton %v, want %v", step, path, header, reached, !want)
				}
			}
			// Each sampler honours its own header only.
			honoured := (header == "X-Opt-A") == (step == "the old sampler")
			if n := optedOut() - before; (n > 0) != honoured {
				t.Errorf("%s: %s: %v more classify requests opted out, want them opted out %v", step, header, n, honoured)
			}
		}
	}
	check("the old sampler", map[string]bool{"X-Opt-A": true, "X-Opt-B": true})
	if err := r.live.Configure(ctx, cfg); err != nil {
		t.Fatalf("Configure: %v", err)
	}
	check("the new sampler", map[string]bool{"X-Opt-A": false, "X-Opt-B": true})
}

// TestOffByDefault: with the sampling section off nothing is sampled or
// written, and no extra call reaches Triton.
func TestOffByDefault(t *testing.T) {
	r := newRig(t, false, "")
	x := batch(rand.New(rand.NewPCG(1, 4)), 4)
	for range 5 {
		r.infer(t, context.Background(), x)
	}
	time.Sleep(50 * time.Millisecond)
	if b, e, c := r.h.Fake.Calls("backbone"), r.h.Fake.Calls("expert_a"), r.h.Fake.Calls("classify"); b != 0 || e != 0 || c != 5 {
		t.Fatalf("calls: backbone %d, expert %d, classify %d; want 0, 0, 5", b, e, c)
	}
	if r.live.Path() != "" {
		t.Errorf("a sampler in service: %s", r.live.Path())
	}
	if err := r.live.Close(time.Second); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(r.dir); len(ents) != 0 {
		t.Errorf("files written with sampling off: %v", ents)
	}
	fams := sidecartest.Scrape(t, r.h.Metrics.Handler())
	for name := range fams {
		if strings.HasPrefix(name, "react_sampling_") {
			t.Errorf("metric %s exported with sampling off", name)
		}
	}
}

// TestResponseUnchanged: with sampling on, the client's response is byte
// for byte Triton's.
func TestResponseUnchanged(t *testing.T) {
	r := newRig(t, true, "")
	req, err := proto.Marshal(sidecartest.CtlRequest("classify", "id-1", batch(rand.New(rand.NewPCG(1, 5)), 5), "logits"))
	if err != nil {
		t.Fatal(err)
	}
	raw := func(addr string) []byte {
		cs, err := sidecartest.NewRawStream(context.Background(), sidecartest.Dial(t, addr), passthrough.Service+"ModelInfer")
		if err != nil {
			t.Fatal(err)
		}
		if err := cs.SendMsg(&passthrough.Frame{Payload: req}); err != nil {
			t.Fatal(err)
		}
		cs.CloseSend()
		var f passthrough.Frame
		if err := cs.RecvMsg(&f); err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
		return f.Payload
	}
	got, want := raw(r.h.Server.GRPCAddr().String()), raw(r.h.Fake.Addr)
	if !bytes.Equal(got, want) {
		t.Fatalf("the sidecar's response (%d bytes) differs from Triton's (%d bytes)", len(got), len(want))
	}
	r.waitDecided(t, 1)
	if b := r.h.Fake.Calls("backbone"); b != 1 {
		t.Errorf("backbone calls %d: the request through the sidecar should be sampled once", b)
	}
}

// TestHTTPResponseUnchanged: with sampling on, a relayed HTTP answer is
// byte for byte Triton's, and its request is sampled.
func TestHTTPResponseUnchanged(t *testing.T) {
	r := newRig(t, true, "")
	body, hdr := sidecartest.InferBody(t, sidecartest.CtlRequest("classify", "id-1", batch(rand.New(rand.NewPCG(1, 6)), 5), "logits"), true)
	_, got := sidecartest.HTTPDo(t, http.MethodPost, r.h.HTTPURL+"/v2/models/classify/infer", body, hdr)
	_, want := sidecartest.HTTPDo(t, http.MethodPost, "http://"+r.h.FakeHTTP+"/v2/models/classify/infer", body, hdr)
	if !bytes.Equal(got, want) {
		t.Fatalf("the sidecar's answer (%d bytes) differs from Triton's (%d bytes)", len(got), len(want))
	}
	r.waitDecided(t, 1)
	if b := r.h.Fake.Calls("backbone"); b != 1 {
		t.Errorf("backbone calls %d: the request through the sidecar should be sampled once", b)
	}
}

// TestHTTPSentBeforeSampled: with sampling on, a relayed HTTP answer is
// flushed to the client before its request is offered to the sampler (the
// proxy leaves a response of known length to be written when the handler
// returns); with sampling off, nothing is flushed, nor sampled.
func TestHTTPSentBeforeSampled(t *testing.T) {
	body, hdr := sidecartest.InferBody(t, sidecartest.CtlRequest("classify", "id-1", batch(rand.New(rand.NewPCG(1, 7)), 3), "logits"), true)
	for _, on := range []bool{true, false} {
		r := newRig(t, on, "")
		if r.live.Sampling() != on {
			t.Fatalf("sampling on %v: Sampling() = %v", on, !on)
		}
		req := httptest.NewRequest(http.MethodPost, "/v2/models/classify/infer", bytes.NewReader(body))
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		r.h.HTTP.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || rec.Flushed != on {
			t.Errorf("sampling on %v: status %d, flushed %v; want 200, flushed %v", on, rec.Code, rec.Flushed, on)
		}
		if on {
			r.waitDecided(t, 1)
		}
		r.wait(t)
		if b, want := r.h.Fake.Calls("backbone"), map[bool]int{true: 1, false: 0}[on]; b != want {
			t.Errorf("sampling on %v: backbone calls %d, want %d", on, b, want)
		}
	}
	var none *sampling.Sampler
	if none.Sampling() {
		t.Error("a nil sampler is sampling")
	}
}

// TestReloadKeepsOrRestarts: a reload with the same sampling section keeps
// the sampler (same file, sums going on); a changed section writes the old
// window and starts a new file.
func TestReloadKeepsOrRestarts(t *testing.T) {
	r := newRig(t, true, "")
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(8, 8))
	first := r.reference()
	x := batch(rng, 4)
	r.infer(t, ctx, x)
	first.add(x)
	r.waitDecided(t, 1)
	path := r.live.Path()
	if err := r.live.Configure(ctx, r.h.Models.Config()); err != nil {
		t.Fatal(err)
	}
	if r.live.Path() != path {
		t.Fatalf("an unchanged section started a new file: %s, was %s", r.live.Path(), path)
	}
	x = batch(rng, 3)
	r.infer(t, ctx, x)
	first.add(x)
	r.waitDecided(t, 2) // the same sampler: its counts go on

	cfg := sidecartest.LoadConfig(t, r.h.Dir, "changed.yaml", withSections(r.h.Config, samplingYAML(r.dir, true, "  holdout: 0.5\n")))
	time.Sleep(time.Millisecond) // a new window starts later
	if err := r.live.Configure(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if r.live.Path() == path {
		t.Fatal("a changed section kept the file")
	}
	checkFile(t, path, first) // written as the old sampler was retired
	second := r.reference()
	x = batch(rng, 2)
	r.infer(t, ctx, x)
	second.add(x)
	// The new sampler's first request: its expert call is the third.
	for start := time.Now(); r.h.Fake.Calls("expert_a") < 3; time.Sleep(time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("expert calls %d, want 3: the request after the reload was not sampled", r.h.Fake.Calls("expert_a"))
		}
	}
	newPath := r.live.Path()
	if err := r.live.Close(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	checkFile(t, newPath, second)
	if m, _ := filepath.Glob(filepath.Join(r.dir, "*.live.safetensors")); len(m) != 2 {
		t.Errorf("files %v, want the two windows'", m)
	}
}

func withSections(c sidecartest.CtlConfig, sections string) sidecartest.CtlConfig {
	c.Sections = sections
	return c
}

// TestReloadRestartsOnTriton: a reload whose sampling section is unchanged
// still starts a new sampler, and file, when what Triton reports of the
// sampled models changed: the features' dimension D (the backbone and
// the expert replaced), or the backbone's feature output, when the
// section leaves it to the model's only output. The new file holds the
// new features' sums.
func TestReloadRestartsOnTriton(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	matrix := func(rows int) [][]float64 {
		m := make([][]float64, rows)
		for i := range m {
			m[i] = []float64{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()}
		}
		return m
	}
	for _, tc := range []struct {
		name     string
		backbone string // the section's backbone
		d        int    // the new models'
		output   string // the new backbone's
	}{
		{"another D", "{model: backbone, output: feature}", 5, "feature"},
		{"another output", "{model: backbone}", 4, "embedding"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, true, "")
			ctx := context.Background()
			section := strings.Replace(samplingYAML(r.dir, true, ""), "backbone: {model: backbone, output: feature}", "backbone: "+tc.backbone, 1)
			cfg := sidecartest.LoadConfig(t, r.h.Dir, "section.yaml", withSections(r.h.Config, section))
			if err := r.live.Configure(ctx, cfg); err != nil {
				t.Fatal(err)
			}
			path := r.live.Path()
			m, e := matrix(tc.d), matrix(tc.d)
			r.h.Fake.Put(faketriton.Linear("backbone", "x", "FP32", tc.output, "FP32", m, nil))
			r.h.Fake.Put(faketriton.Linear("expert_a", "x", "FP32", "feature", "FP32", e, nil))
			time.Sleep(time.Millisecond) // a new window starts later
			if err := r.live.Configure(ctx, cfg); err != nil {
				t.Fatal(err)
			}
			if r.live.Path() == path {
				t.Fatalf("the sampler was kept (%s)", path)
			}
			want := newSums(m, nil, e)
			x := batch(rng, 3)
			r.infer(t, ctx, x)
			want.add(x)
			newPath := r.live.Path()
			if err := r.live.Close(5 * time.Second); err != nil {
				t.Fatal(err)
			}
			checkFile(t, newPath, want)
		})
	}
}

// TestSaturated: while the sidecar is saturated, a request is neither
// sampled nor started, relayed or served, and is counted as such; the same
// request otherwise is.
func TestSaturated(t *testing.T) {
	r := newRig(t, true, "")
	x := batch(rand.New(rand.NewPCG(2, 7)), 2)
	req := sidecartest.CtlRequest("classify", "", x, "logits")
	payload, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	feature := triton.NewFP32("feature", []int64{2, int64(r.h.Scenario.D)}, make([]float32, 2*r.h.Scenario.D))
	backbone := react.ModelRef{Name: "backbone", Output: "feature"}
	for _, saturated := range []bool{true, false} {
		r.live.Relayed(nil, payload, saturated)
		start := r.live.Served("single", nil, saturated, req, backbone, feature)
		if (start == nil) != saturated {
			t.Errorf("saturated %v: Served started a sample: %v", saturated, start != nil)
		}
		if start != nil {
			start()
		}
		r.live.Wait(context.Background())
		// The first round skipped one request of each model, the second
		// sampled one.
		wantSampled := 1.0
		if saturated {
			wantSampled = 0
		}
		fams := sidecartest.Scrape(t, r.h.Metrics.Handler())
		for _, model := range []string{"classify", "single"} {
			skipped, _ := sidecartest.MetricValue(fams, "react_sampling_skipped_total", map[string]string{"model": model, "task": "a", "reason": "saturated"})
			sampled, _ := sidecartest.MetricValue(fams, "react_sampling_requests_total", map[string]string{"model": model, "task": "a"})
			if skipped != 1 || sampled != wantSampled {
				t.Errorf("saturated %v, %s: skipped{saturated} %v, sampled %v; want 1, %v", saturated, model, skipped, sampled, wantSampled)
			}
		}
	}
}
