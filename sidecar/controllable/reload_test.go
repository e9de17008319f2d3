package controllable_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/internal/faketriton"
	"github.com/mergectl/react-triton/sidecar/internal/sidecartest"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// load runs requests on the sidecar until stop is called, checking each
// answer against the scenarios whose statistics may be in service (the
// test changes them around a reload), and counts the requests and keeps
// the first error.
type load struct {
	h       *sidecartest.Harness
	accept  atomic.Pointer[[]*faketriton.Scenario]
	stop    chan struct{}
	wg      sync.WaitGroup
	n       atomic.Int64
	each    []atomic.Int64 // requests done by each worker
	errOnce sync.Once
	err     error       // read after the workers stopped
	failed  atomic.Bool // set with err
}

func startLoad(h *sidecartest.Harness, workers int) *load {
	l := &load{h: h, stop: make(chan struct{}), each: make([]atomic.Int64, workers)}
	l.set(h.Scenario)
	for w := 0; w < workers; w++ {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for i := 0; ; i++ {
				select {
				case <-l.stop:
					return
				default:
				}
				if err := l.one(w, i); err != nil {
					l.errOnce.Do(func() { l.err = err })
					l.failed.Store(true)
					return
				}
				l.n.Add(1)
				l.each[w].Add(1)
			}
		}()
	}
	return l
}

// one sends one request: the default preference on gRPC or HTTP, or the
// preset b_first, which every configuration of these tests keeps.
func (l *load) one(w, i int) error {
	before := l.accept.Load()
	x := sidecartest.CtlBatch[3*((w+i)%4):]
	ctx := context.Background()
	weights := []float64{1, 0, 0}
	if i%3 == 1 {
		ctx = metadata.NewOutgoingContext(ctx, metadata.Pairs("react-preset", "b_first"))
		weights = []float64{0.2, 0.8, 0}
	}
	resp, err := l.h.Client.ModelInfer(ctx, sidecartest.CtlRequest("single", fmt.Sprint(w, i), x))
	if err != nil {
		return fmt.Errorf("request %d of worker %d: %w", i, w, err)
	}
	// A request in flight while the test changed what is right may get
	// either answer: the state it was served from is the one in service
	// at some moment between its start and its end.
	accept := *before
	if after := l.accept.Load(); after != before {
		accept = append(append([]*faketriton.Scenario(nil), accept...), *after...)
	}
	var err1 error
	for _, sc := range accept {
		if err1 = sidecartest.CheckLogits(sc, "a", weights, x, resp.GetRawOutputContents()[0]); err1 == nil {
			return nil
		}
	}
	return fmt.Errorf("request %d of worker %d: %w", i, w, err1)
}

// set sets the scenarios whose answers are right from now on.
func (l *load) set(scs ...*faketriton.Scenario) { l.accept.Store(&scs) }

// progress waits until the load has made n more requests.
func (l *load) progress(t *testing.T, n int64) {
	t.Helper()
	start := l.n.Load()
	sidecartest.WaitFor(t, 10*time.Second, "requests under load", func() bool { return l.n.Load() >= start+n || l.failed.Load() })
}

// settle waits until every worker has finished two more requests: the one
// it had in flight, and one it started afterwards.
func (l *load) settle(t *testing.T) {
	t.Helper()
	start := make([]int64, len(l.each))
	for i := range l.each {
		start[i] = l.each[i].Load()
	}
	sidecartest.WaitFor(t, 10*time.Second, "every worker's requests", func() bool {
		for i := range l.each {
			if l.each[i].Load() < start[i]+2 && !l.failed.Load() {
				return false
			}
		}
		return true
	})
}

func (l *load) finish(t *testing.T) {
	t.Helper()
	close(l.stop)
	l.wg.Wait()
	if l.err != nil {
		t.Errorf("under load: %v", l.err)
	}
	if l.n.Load() == 0 {
		t.Error("no request completed under load")
	}
}

// TestModelsReloadUnderLoad: Models.Reload with a corrupt components file
// or an invalid configuration keeps the old state serving, requests in
// flight included; a valid configuration takes effect at once.
func TestModelsReloadUnderLoad(t *testing.T) {
	h := sidecartest.StartHarness(t, nil)
	l := startLoad(h, 4)
	defer func() {
		if l != nil {
			l.finish(t)
		}
	}()
	ctx := context.Background()
	oldCfg, oldSums := h.Models.Config(), h.Models.Checksums()
	l.progress(t, 20)

	// A corrupt components file.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bad.safetensors"), sidecartest.CorruptComponents(t, h.Scenario), 0o644); err != nil {
		t.Fatal(err)
	}
	c := h.Config
	c.Components = "bad.safetensors"
	err := h.Models.Reload(ctx, sidecartest.LoadConfig(t, dir, "corrupt.yaml", c))
	if err == nil || !strings.Contains(err.Error(), "components[0].path") {
		t.Errorf("Reload with a corrupt components file: %v", err)
	}
	if h.Models.Config() != oldCfg || !h.Models.Ready() {
		t.Error("a failed Reload changed the configuration in service")
	}
	l.progress(t, 20)

	// A configuration that does not fit Triton.
	c = h.Config
	c.Components = filepath.Join(h.Dir, "components.safetensors")
	c.HeadTask = "zz"
	if err := h.Models.Reload(ctx, sidecartest.LoadConfig(t, dir, "invalid.yaml", c)); err == nil || !strings.Contains(err.Error(), `unknown task "zz"`) {
		t.Errorf("Reload with an unknown task: %v", err)
	}
	if h.Models.Config() != oldCfg {
		t.Error("a failed Reload changed the configuration in service")
	}
	l.progress(t, 20)

	// A valid configuration with a new preset and new statistics.
	sc2 := sidecartest.OtherStats(h.Scenario, 99)
	sc2.WriteComponents(t, dir, "new.safetensors")
	c = h.Config
	c.Components = "new.safetensors"
	c.Presets = map[string]string{"b_first": "a=0.2,b=0.8", "c_only": "c=1"}
	c.CacheSize = 8
	newCfg := sidecartest.LoadConfig(t, dir, "new.yaml", c)
	l.set(h.Scenario, sc2) // requests in flight may get either
	if err := h.Models.Reload(ctx, newCfg); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	l.settle(t) // the requests that were in flight are done
	l.set(sc2)
	if h.Models.Config() != newCfg {
		t.Error("the new configuration is not in service")
	}
	if sums := h.Models.Checksums(); sums[filepath.Join(dir, "new.safetensors")] == "" || len(oldSums) != 1 {
		t.Errorf("Checksums after Reload = %v", sums)
	}
	l.progress(t, 20)
	l.finish(t)
	l = nil

	md := metadata.NewOutgoingContext(ctx, metadata.Pairs("react-preset", "c_only"))
	resp, err := h.Client.ModelInfer(md, sidecartest.CtlRequest("multi", "c", sidecartest.CtlBatch))
	if err != nil {
		t.Fatalf("new preset: %v", err)
	}
	for i, task := range sidecartest.CtlTasks {
		if err := sidecartest.CheckLogits(sc2, task, []float64{0, 0, 1}, sidecartest.CtlBatch, resp.GetRawOutputContents()[i]); err != nil {
			t.Error(err)
		}
	}
	// The statistics survive the reload.
	st, err := h.Client.ModelStatistics(ctx, &tritonpb.ModelStatisticsRequest{Name: "single"})
	if err != nil || st.GetModelStats()[0].GetInferenceStats().GetSuccess().GetCount() < 80 {
		t.Errorf("statistics after Reload: %v, %v", st, err)
	}
}

// TestModelsReloadDuringStart: a reload that succeeds while Start is still
// waiting for Triton stays in service; Start must not put the old, unbuilt
// configuration back.
func TestModelsReloadDuringStart(t *testing.T) {
	h := sidecartest.NewHarness(t, nil)
	h.Fake.Put(h.Scenario.BackboneModel("backbone2", "FP32"))
	h.Fake.SetReady("backbone", false)
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan error, 1)
	go func() { started <- h.Models.Start(ctx) }()
	defer func() {
		cancel()
		<-started
	}()
	sidecartest.WaitFor(t, 5*time.Second, "Start's first attempt", func() bool { return h.Fake.ReadyCalls("backbone") > 0 })

	c := h.Config
	c.Components = filepath.Join(h.Dir, "components.safetensors")
	c.Backbone = "backbone2"
	newCfg := sidecartest.LoadConfig(t, t.TempDir(), "new.yaml", c)
	if err := h.Models.Reload(context.Background(), newCfg); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if !h.Models.Ready() {
		t.Fatal("not ready right after a successful Reload")
	}
	// Start sees the models built by the reload and ends, without storing
	// its own state over the reloaded one.
	select {
	case err := <-started:
		started <- err // for the deferred receive
		if err != nil {
			t.Errorf("Start after a successful Reload: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Start did not end after a successful Reload")
	}
	if !h.Models.Ready() || h.Models.Config() != newCfg {
		t.Errorf("after Start ended: ready %v, backbone %q; want the reloaded configuration serving",
			h.Models.Ready(), h.Models.Config().Models[0].Backbone.Model)
	}
}

// TestModelsReloadKeepsCache: W_p solved for a request stay cached across
// a reload that keeps the components file, β and the normalisation; a
// reload that changes β solves again (docs/sidecar.md, Reload).
func TestModelsReloadKeepsCache(t *testing.T) {
	h := sidecartest.StartHarness(t, nil)
	lookups := func() (hit, miss float64) {
		fams := sidecartest.Scrape(t, h.Metrics.Handler())
		hit, _ = sidecartest.MetricValue(fams, "react_wp_cache_lookups_total", map[string]string{"components": "zoo", "result": "hit"})
		miss, _ = sidecartest.MetricValue(fams, "react_wp_cache_lookups_total", map[string]string{"components": "zoo", "result": "miss"})
		return
	}
	infer := func() {
		t.Helper()
		ctx := metadata.NewOutgoingContext(context.Background(), metadata.Pairs("react-preference", "b=1,c=3"))
		if _, err := h.Client.ModelInfer(ctx, sidecartest.CtlRequest("single", "k", sidecartest.CtlBatch)); err != nil {
			t.Fatal(err)
		}
	}
	infer()
	if hit, miss := lookups(); hit != 0 || miss != 1 {
		t.Fatalf("first request: %v hits, %v misses", hit, miss)
	}
	// The same file, loaded again.
	cfg, err := config.Load(h.ConfigPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Models.Reload(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	infer()
	if hit, miss := lookups(); hit != 1 || miss != 1 {
		t.Errorf("after a reload of the same configuration: %v hits, %v misses; want the cached W_p", hit, miss)
	}
	// Another β: another W_p.
	beta := 3.0
	cfg, err = config.Load(h.ConfigPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Components[0].Beta = &beta
	if err := h.Models.Reload(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	infer()
	if hit, miss := lookups(); hit != 1 || miss != 2 {
		t.Errorf("after a reload with another β: %v hits, %v misses; want a new solve", hit, miss)
	}
	ctx := metadata.NewOutgoingContext(context.Background(), metadata.Pairs("react-preference", "b=1,c=3"))
	resp, err := h.Client.ModelInfer(ctx, sidecartest.CtlRequest("single", "k", sidecartest.CtlBatch))
	if err != nil {
		t.Fatal(err)
	}
	// The answer is β=3's, computed independently.
	want, tol := wantLogitsBeta(h.Scenario, []float64{0, 0.25, 0.75}, beta, sidecartest.CtlBatch)
	got, _ := faketriton.Decode("FP32", resp.GetRawOutputContents()[0])
	for i := range want {
		if !(abs(got[i]-want[i]) <= tol[i]) {
			t.Fatalf("with β=3: %v, want %v", got, want)
		}
	}
}

// wantLogitsBeta is WantLogits for head a (FP32) with another β.
func wantLogitsBeta(sc *faketriton.Scenario, weights []float64, beta float64, x []float64) (want, tol []float64) {
	s := *sc
	s.Beta = beta
	return sidecartest.WantLogits(&s, "a", "FP32", weights, x)
}
