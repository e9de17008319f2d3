package sidecar

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"google.golang.org/grpc/metadata"

	"github.com/mergectl/react-triton/internal/testutil"
	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/internal/faketriton"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// otherStats returns a scenario with the same backbone and heads as sc but
// other calibration samples, hence other W_p.
func OtherStats(sc *faketriton.Scenario, seed uint64) *faketriton.Scenario {
	o := faketriton.NewScenario(seed, sc.D, sc.Tasks...)
	o.M, o.Bias, o.Heads = sc.M, sc.Bias, sc.Heads
	return o
}

// corruptComponents returns the bytes of sc's components file with one data
// byte flipped.
func CorruptComponents(t *testing.T, sc *faketriton.Scenario) []byte {
	t.Helper()
	b := sc.ComponentsBytes(t)
	b[len(b)-5] ^= 0x10
	return b
}

// loadConfig writes a configuration file into dir and loads it.
func loadConfig(t *testing.T, dir, name string, c CtlConfig) *config.Config {
	t.Helper()
	path := filepath.Join(dir, name)
	WriteFile(t, path, c.YAML())
	cfg, err := config.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// load runs requests on the sidecar until stop is called, checking each
// answer against the scenarios whose statistics may be in service (the
// test changes them around a reload), and counts the requests and keeps
// the first error.
type load struct {
	h       *Harness
	accept  atomic.Pointer[[]*faketriton.Scenario]
	stop    chan struct{}
	wg      sync.WaitGroup
	n       atomic.Int64
	each    []atomic.Int64 // requests done by each worker
	errOnce sync.Once
	err     error       // read after the workers stopped
	failed  atomic.Bool // set with err
}

func startLoad(h *Harness, workers int) *load {
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
	x := CtlBatch[3*((w+i)%4):]
	ctx := context.Background()
	weights := []float64{1, 0, 0}
	if i%3 == 1 {
		ctx = metadata.NewOutgoingContext(ctx, metadata.Pairs("react-preset", "b_first"))
		weights = []float64{0.2, 0.8, 0}
	}
	resp, err := l.h.Client.ModelInfer(ctx, CtlRequest("single", fmt.Sprint(w, i), x))
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
		if err1 = CheckLogits(sc, "a", weights, x, resp.GetRawOutputContents()[0]); err1 == nil {
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
	WaitFor(t, 10*time.Second, "requests under load", func() bool { return l.n.Load() >= start+n || l.failed.Load() })
}

// settle waits until every worker has finished two more requests: the one
// it had in flight, and one it started afterwards.
func (l *load) settle(t *testing.T) {
	t.Helper()
	start := make([]int64, len(l.each))
	for i := range l.each {
		start[i] = l.each[i].Load()
	}
	WaitFor(t, 10*time.Second, "every worker's requests", func() bool {
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
	h := StartHarness(t, nil)
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
	if err := os.WriteFile(filepath.Join(dir, "bad.safetensors"), CorruptComponents(t, h.Scenario), 0o644); err != nil {
		t.Fatal(err)
	}
	c := h.Config
	c.Components = "bad.safetensors"
	err := h.Models.Reload(ctx, loadConfig(t, dir, "corrupt.yaml", c))
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
	if err := h.Models.Reload(ctx, loadConfig(t, dir, "invalid.yaml", c)); err == nil || !strings.Contains(err.Error(), `unknown task "zz"`) {
		t.Errorf("Reload with an unknown task: %v", err)
	}
	if h.Models.Config() != oldCfg {
		t.Error("a failed Reload changed the configuration in service")
	}
	l.progress(t, 20)

	// A valid configuration with a new preset and new statistics.
	sc2 := OtherStats(h.Scenario, 99)
	sc2.WriteComponents(t, dir, "new.safetensors")
	c = h.Config
	c.Components = "new.safetensors"
	c.Presets = map[string]string{"b_first": "a=0.2,b=0.8", "c_only": "c=1"}
	c.CacheSize = 8
	newCfg := loadConfig(t, dir, "new.yaml", c)
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
	resp, err := h.Client.ModelInfer(md, CtlRequest("multi", "c", CtlBatch))
	if err != nil {
		t.Fatalf("new preset: %v", err)
	}
	for i, task := range CtlTasks {
		if err := CheckLogits(sc2, task, []float64{0, 0, 1}, CtlBatch, resp.GetRawOutputContents()[i]); err != nil {
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
	h := NewHarness(t, nil)
	h.Fake.Put(h.Scenario.BackboneModel("backbone2", "FP32"))
	h.Fake.SetReady("backbone", false)
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan error, 1)
	go func() { started <- h.Models.Start(ctx) }()
	defer func() {
		cancel()
		<-started
	}()
	WaitFor(t, 5*time.Second, "Start's first attempt", func() bool { return h.Fake.ReadyCalls("backbone") > 0 })

	c := h.Config
	c.Components = filepath.Join(h.Dir, "components.safetensors")
	c.Backbone = "backbone2"
	newCfg := loadConfig(t, t.TempDir(), "new.yaml", c)
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

// reloaderHarness runs the reloader of reload.go on a harness's files until
// the test ends, with a SIGHUP channel of the test's.
func runReloader(t *testing.T, h *Harness) chan<- os.Signal {
	t.Helper()
	hup := make(chan os.Signal, 1)
	r := &reloader{models: h.Models, metrics: h.Metrics, log: slog.New(slog.NewTextHandler(h.Log, nil)), level: new(slog.LevelVar)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.run(ctx, hup)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return hup
}

// reloads returns the reload counters and the last-reload gauge.
func reloads(t *testing.T, h http.Handler) (success, failure, ok float64) {
	t.Helper()
	fams := Scrape(t, h)
	success, _ = MetricValue(fams, "react_config_reloads_total", map[string]string{"result": "success"})
	failure, _ = MetricValue(fams, "react_config_reloads_total", map[string]string{"result": "failure"})
	ok, _ = MetricValue(fams, "react_config_last_reload_successful", nil)
	return
}

// answers reports whether the single model's default answer is sc's.
func answers(h *Harness, sc *faketriton.Scenario, preset string, weights []float64) error {
	ctx := context.Background()
	if preset != "" {
		ctx = metadata.NewOutgoingContext(ctx, metadata.Pairs("react-preset", preset))
	}
	resp, err := h.Client.ModelInfer(ctx, CtlRequest("single", "r", CtlBatch))
	if err != nil {
		return err
	}
	return CheckLogits(sc, "a", weights, CtlBatch, resp.GetRawOutputContents()[0])
}

// TestReloaderFiles: the reloader reloads when a file is replaced by an
// atomic rename and on SIGHUP; a corrupt file leaves the old state serving
// and drops react_config_last_reload_successful to 0.
func TestReloaderFiles(t *testing.T) {
	h := StartHarness(t, nil)
	hup := runReloader(t, h)
	metrics := h.Metrics.Handler()
	wait := func(what string, cond func(success, failure, ok float64) bool) {
		t.Helper()
		WaitFor(t, 10*time.Second, what, func() bool { return cond(reloads(t, metrics)) })
	}

	// A forced reload with nothing changed succeeds; once it is done the
	// watches are in place.
	hup <- syscall.SIGHUP
	wait("the SIGHUP reload", func(s, f, ok float64) bool { return s == 1 && ok == 1 })

	// (a) The components file replaced by an atomic rename.
	sc2 := OtherStats(h.Scenario, 42)
	WriteBytes(t, filepath.Join(h.Dir, "components.safetensors"), sc2.ComponentsBytes(t))
	wait("the reload of new components", func(s, f, ok float64) bool { return s == 2 })
	if err := answers(h, sc2, "", []float64{1, 0, 0}); err != nil {
		t.Errorf("after new components: %v", err)
	}

	// (b) A corrupt one: the reload fails, the old state serves.
	WriteBytes(t, filepath.Join(h.Dir, "components.safetensors"), CorruptComponents(t, h.Scenario))
	wait("the failed reload", func(s, f, ok float64) bool { return f == 1 && ok == 0 })
	if err := answers(h, sc2, "", []float64{1, 0, 0}); err != nil {
		t.Errorf("after a failed reload: %v", err)
	}
	if !strings.Contains(h.Log.String(), "reload failed") {
		t.Error("the failed reload was not logged")
	}
	// SIGHUP while it is still corrupt: fails again.
	hup <- syscall.SIGHUP
	wait("the second failed reload", func(s, f, ok float64) bool { return f == 2 && ok == 0 })

	// (c) The configuration file replaced: a new preset; the components
	// file repaired.
	WriteBytes(t, filepath.Join(h.Dir, "components.safetensors"), h.Scenario.ComponentsBytes(t))
	c := h.Config
	c.Presets = map[string]string{"b_first": "a=0.2,b=0.8", "c_only": "c=1"}
	WriteFile(t, h.ConfigPath, c.YAML())
	wait("the reload of the new configuration", func(s, f, ok float64) bool { return s >= 3 && ok == 1 })
	WaitFor(t, 10*time.Second, "the new preset", func() bool { return answers(h, h.Scenario, "c_only", []float64{0, 0, 1}) == nil })
	if err := answers(h, h.Scenario, "", []float64{1, 0, 0}); err != nil {
		t.Errorf("after the repair: %v", err)
	}

	// (d) An invalid configuration file: the reload fails, the old state
	// serves.
	_, f0, _ := reloads(t, metrics)
	WriteFile(t, h.ConfigPath, "triton: [\n")
	wait("the failed reload of a broken file", func(s, f, ok float64) bool { return f == f0+1 && ok == 0 })
	if err := answers(h, h.Scenario, "c_only", []float64{0, 0, 1}); err != nil {
		t.Errorf("after a broken configuration: %v", err)
	}
}

// TestReloaderConfigMap: a Kubernetes ConfigMap update (a new timestamped
// directory, and the ..data symlink swapped by renaming ..data_tmp over it)
// reloads the configuration and the components.
func TestReloaderConfigMap(t *testing.T) {
	h := StartHarness(t, func(c *CtlConfig) { c.ConfigMap = true })
	hup := runReloader(t, h)
	metrics := h.Metrics.Handler()
	hup <- syscall.SIGHUP
	WaitFor(t, 10*time.Second, "the SIGHUP reload", func() bool { s, _, _ := reloads(t, metrics); return s == 1 })

	swap := func(name string, sc *faketriton.Scenario, comps []byte, c CtlConfig) {
		t.Helper()
		data := filepath.Join(h.Dir, name)
		if err := os.Mkdir(data, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(data, "components.safetensors"), comps, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(data, "config.yaml"), []byte(c.YAML()), 0o644); err != nil {
			t.Fatal(err)
		}
		tmp := filepath.Join(h.Dir, "..data_tmp")
		if err := os.Symlink(name, tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(h.Dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}

	sc2 := OtherStats(h.Scenario, 5)
	c := h.Config
	c.Presets = map[string]string{"b_first": "a=0.2,b=0.8", "c_only": "c=1"}
	swap("..2026_01_02_00_00_00.000000002", sc2, sc2.ComponentsBytes(t), c)
	WaitFor(t, 10*time.Second, "the ConfigMap update", func() bool { return answers(h, sc2, "c_only", []float64{0, 0, 1}) == nil })
	if s, _, ok := reloads(t, metrics); s != 2 || ok != 1 {
		t.Errorf("after the ConfigMap update: %v successes, gauge %v", s, ok)
	}
	if err := answers(h, sc2, "", []float64{1, 0, 0}); err != nil {
		t.Error(err)
	}

	// An update with a corrupt components file: kept out of service.
	swap("..2026_01_03_00_00_00.000000003", h.Scenario, CorruptComponents(t, h.Scenario), h.Config)
	WaitFor(t, 10*time.Second, "the failed ConfigMap update", func() bool { _, f, ok := reloads(t, metrics); return f == 1 && ok == 0 })
	if err := answers(h, sc2, "c_only", []float64{0, 0, 1}); err != nil {
		t.Errorf("after a corrupt update: %v", err)
	}
}

// TestCommandReload runs the whole command (NewCommand) with a SIGHUP
// channel of the test's, and follows a reload through its metrics
// endpoint.
func TestCommandReload(t *testing.T) {
	sc := faketriton.NewScenario(7, 4, CtlTasks...)
	fake := faketriton.Start(t, CtlModels(sc)...)
	dir := t.TempDir()
	sc.WriteComponents(t, dir, "components.safetensors")
	c := CtlConfig{TritonGRPC: fake.Addr, TritonHTTP: testutil.ClosedAddr(t), Components: "components.safetensors",
		DefaultPreference: "a=1", MetricsListen: "127.0.0.1:0", LogFormat: "json"}
	cfgPath := filepath.Join(dir, "config.yaml")
	WriteFile(t, cfgPath, c.YAML())

	ctx, cancel := context.WithCancel(context.Background())
	hup := make(chan os.Signal, 1)
	stderr := &SyncBuffer{}
	cmd := NewCommand(ctx, hup, stderr, stderr)
	cmd.SetArgs([]string{"--config", cfgPath})
	done := make(chan error, 1)
	go func() { done <- cmd.Execute() }()
	defer func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Execute: %v\n%s", err, stderr.String())
			}
		case <-time.After(20 * time.Second):
			t.Error("the command did not stop")
		}
	}()

	// The addresses, from the log.
	var grpcAddr, metricsAddr string
	WaitFor(t, 10*time.Second, "the sidecar ready in the log", func() bool {
		ready := false
		sc := bufio.NewScanner(strings.NewReader(stderr.String()))
		for sc.Scan() {
			var line map[string]any
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				continue
			}
			switch line["msg"] {
			case "sidecar listening":
				grpcAddr, _ = line["grpc"].(string)
				metricsAddr, _ = line["metrics"].(string)
			case "sidecar ready":
				ready = true
			}
		}
		return ready && grpcAddr != "" && metricsAddr != ""
	})
	client := tritonpb.NewGRPCInferenceServiceClient(Dial(t, grpcAddr))
	scrapeHTTP := func() (success, failure, ok float64) {
		t.Helper()
		resp, err := http.Get("http://" + metricsAddr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		fams := ParseMetrics(t, resp.Body)
		success, _ = MetricValue(fams, "react_config_reloads_total", map[string]string{"result": "success"})
		failure, _ = MetricValue(fams, "react_config_reloads_total", map[string]string{"result": "failure"})
		ok, _ = MetricValue(fams, "react_config_last_reload_successful", nil)
		return
	}
	infer := func(sc *faketriton.Scenario) error {
		resp, err := client.ModelInfer(context.Background(), CtlRequest("single", "cmd", CtlBatch))
		if err != nil {
			return err
		}
		return CheckLogits(sc, "a", []float64{1, 0, 0}, CtlBatch, resp.GetRawOutputContents()[0])
	}
	if err := infer(sc); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := scrapeHTTP(); ok != 1 {
		t.Errorf("react_config_last_reload_successful = %v at start", ok)
	}

	hup <- syscall.SIGHUP
	WaitFor(t, 10*time.Second, "the SIGHUP reload", func() bool { s, _, _ := scrapeHTTP(); return s == 1 })

	WriteBytes(t, filepath.Join(dir, "components.safetensors"), CorruptComponents(t, sc))
	WaitFor(t, 10*time.Second, "the failed reload", func() bool { _, f, ok := scrapeHTTP(); return f == 1 && ok == 0 })
	if err := infer(sc); err != nil {
		t.Errorf("after a failed reload: %v", err)
	}

	sc2 := OtherStats(sc, 11)
	WriteBytes(t, filepath.Join(dir, "components.safetensors"), sc2.ComponentsBytes(t))
	WaitFor(t, 10*time.Second, "the reload of new components", func() bool { s, _, ok := scrapeHTTP(); return s == 2 && ok == 1 })
	if err := infer(sc2); err != nil {
		t.Errorf("after new components: %v", err)
	}

	// Triton's address cannot change without a restart: the old one stays,
	// with a warning. The log level does change.
	c2 := c
	c2.TritonGRPC = testutil.ClosedAddr(t)
	c2.LogLevel = "error"
	WriteFile(t, cfgPath, c2.YAML())
	WaitFor(t, 10*time.Second, "the reload of the new configuration", func() bool { s, _, ok := scrapeHTTP(); return s == 3 && ok == 1 })
	if !strings.Contains(stderr.String(), "needs a restart") || !strings.Contains(stderr.String(), `"setting":"triton.grpc"`) {
		t.Errorf("no restart warning for triton.grpc in the log:\n%s", stderr.String())
	}
	if err := infer(sc2); err != nil {
		t.Errorf("after a reload that changes triton.grpc: %v", err)
	}
	sighups := strings.Count(stderr.String(), "SIGHUP: reloading")
	hup <- syscall.SIGHUP
	WaitFor(t, 10*time.Second, "the second SIGHUP reload", func() bool { s, _, _ := scrapeHTTP(); return s == 4 })
	if n := strings.Count(stderr.String(), "SIGHUP: reloading"); n != sighups {
		t.Errorf("an info message was logged at log.level error")
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		t.Fatal("cancelled early")
	}
}

// TestReloaderFingerprintAfterNewPaths: after a reload that moves the
// components to another file, the reloader's record of the files in
// service is that of the new files, so that nothing counts as changed
// (and the next unrelated event in the directory reloads nothing).
func TestReloaderFingerprintAfterNewPaths(t *testing.T) {
	h := StartHarness(t, nil)
	r := &reloader{models: h.Models, metrics: h.Metrics, log: slog.New(slog.NewTextHandler(h.Log, nil)), level: new(slog.LevelVar)}
	r.sums = r.fingerprint(nil)
	if r.changed() {
		t.Fatal("changed right after fingerprinting")
	}
	OtherStats(h.Scenario, 3).WriteComponents(t, h.Dir, "moved.safetensors")
	c := h.Config
	c.Components = "moved.safetensors"
	WriteFile(t, h.ConfigPath, c.YAML())
	if !r.changed() {
		t.Fatal("a new configuration file does not count as a change")
	}
	r.reload(context.Background(), false)
	if s, _, ok := reloads(t, h.Metrics.Handler()); s != 1 || ok != 1 {
		t.Fatalf("reload: %v successes, gauge %v\n%s", s, ok, h.Log.String())
	}
	if got := h.Models.Files(); len(got) != 1 || filepath.Base(got[0]) != "moved.safetensors" {
		t.Fatalf("files in service: %v", got)
	}
	if r.changed() {
		t.Error("nothing changed since the reload, but changed() reports a change")
	}
	// Touching a file (same content) is no change either.
	now := time.Now().Add(time.Second)
	if err := os.Chtimes(filepath.Join(h.Dir, "moved.safetensors"), now, now); err != nil {
		t.Fatal(err)
	}
	if r.changed() {
		t.Error("a touched file with the same content counts as a change")
	}
	// Only events on the files in service (or a ConfigMap's ..data) matter.
	for _, tt := range []struct {
		name string
		want bool
	}{
		{"moved.safetensors", true},
		{"config.yaml", true},
		{"..data", true},
		{"..2026_01_01_00_00_00.000000001", true},
		{"components.safetensors", false}, // no longer in service
		{"sidecar.log", false},
		{"config.yaml.tmp", false},
	} {
		if got := r.relevant(fsnotify.Event{Name: filepath.Join(h.Dir, tt.name), Op: fsnotify.Write}); got != tt.want {
			t.Errorf("relevant(%s) = %v, want %v", tt.name, got, tt.want)
		}
	}
	if r.relevant(fsnotify.Event{Name: filepath.Join(t.TempDir(), "config.yaml"), Op: fsnotify.Write}) {
		t.Error("an event on a config.yaml in another directory is relevant")
	}
}

// TestModelsReloadKeepsCache: W_p solved for a request stay cached across
// a reload that keeps the components file, β and the normalisation; a
// reload that changes β solves again (docs/sidecar.md, Reload).
func TestModelsReloadKeepsCache(t *testing.T) {
	h := StartHarness(t, nil)
	lookups := func() (hit, miss float64) {
		fams := Scrape(t, h.Metrics.Handler())
		hit, _ = MetricValue(fams, "react_wp_cache_lookups_total", map[string]string{"components": "zoo", "result": "hit"})
		miss, _ = MetricValue(fams, "react_wp_cache_lookups_total", map[string]string{"components": "zoo", "result": "miss"})
		return
	}
	infer := func() {
		t.Helper()
		ctx := metadata.NewOutgoingContext(context.Background(), metadata.Pairs("react-preference", "b=1,c=3"))
		if _, err := h.Client.ModelInfer(ctx, CtlRequest("single", "k", CtlBatch)); err != nil {
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
	resp, err := h.Client.ModelInfer(ctx, CtlRequest("single", "k", CtlBatch))
	if err != nil {
		t.Fatal(err)
	}
	// The answer is β=3's, computed independently.
	want, tol := wantLogitsBeta(h.Scenario, []float64{0, 0.25, 0.75}, beta, CtlBatch)
	got, _ := faketriton.Decode("FP32", resp.GetRawOutputContents()[0])
	for i := range want {
		if !(abs(got[i]-want[i]) <= tol[i]) {
			t.Fatalf("with β=3: %v, want %v", got, want)
		}
	}
}

// wantLogitsBeta is wantLogits for head a (FP32) with another β.
func wantLogitsBeta(sc *faketriton.Scenario, weights []float64, beta float64, x []float64) (want, tol []float64) {
	s := *sc
	s.Beta = beta
	return WantLogits(&s, "a", "FP32", weights, x)
}
