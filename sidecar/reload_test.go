package sidecar

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"google.golang.org/grpc/metadata"

	"github.com/mergectl/react-triton/experiment/feedback"
	"github.com/mergectl/react-triton/internal/testutil"
	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/controllable"
	"github.com/mergectl/react-triton/sidecar/internal/faketriton"
	"github.com/mergectl/react-triton/sidecar/internal/sidecartest"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// TestReloaderIgnoresOtherFiles: only events on the files in service, or on
// a ConfigMap's ..data entries, start a reload check; a log written next to
// the configuration does not (each check may hash large components files).
func TestReloaderIgnoresOtherFiles(t *testing.T) {
	cfg := &config.Config{File: "/etc/react/sidecar.yaml",
		Components: []config.Components{{Name: "c", Path: "/models/react/components.safetensors"}}}
	models, err := controllable.NewModels(cfg, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &reloader{models: models}
	for name, want := range map[string]bool{
		"/etc/react/sidecar.yaml":                  true,
		"/etc/react/..data":                        true,
		"/etc/react/..2026_11_23_10_00_00.1234":    true,
		"/models/react/components.safetensors":     true,
		"/etc/react/sidecar.log":                   false,
		"/models/react/components.safetensors.tmp": false,
		"/elsewhere/sidecar.yaml":                  false,
		"/models/react/other.safetensors":          false,
	} {
		if got := r.relevant(fsnotify.Event{Name: name, Op: fsnotify.Write}); got != want {
			t.Errorf("relevant(%s) = %v, want %v", name, got, want)
		}
	}
}

// TestReloaderRetriesTransientFailure: a reload that fails only because a
// model is not ready on Triton is tried again by itself, and succeeds once
// the model is ready, with no file change and no SIGHUP.
func TestReloaderRetriesTransientFailure(t *testing.T) {
	defer func(d time.Duration) { reloadRetry = d }(reloadRetry)
	reloadRetry = 50 * time.Millisecond
	h := sidecartest.StartHarness(t, nil)
	h.Fake.SetReady("head_a", false)
	hup := runReloader(t, h)
	metrics := h.Metrics.Handler()
	hup <- syscall.SIGHUP
	sidecartest.WaitFor(t, 10*time.Second, "the failed reload", func() bool { _, f, ok := reloads(t, metrics); return f >= 1 && ok == 0 })
	h.Fake.SetReady("head_a", true)
	sidecartest.WaitFor(t, 10*time.Second, "the retried reload", func() bool { s, _, ok := reloads(t, metrics); return s == 1 && ok == 1 })
}

// TestReloaderRecordsWhatWasLoaded: a components file replaced while a
// reload's build ran (after the build read it) is not taken as in service:
// the reloader records the hash of the bytes the build read, so the next
// check sees the change and reloads it.
func TestReloaderRecordsWhatWasLoaded(t *testing.T) {
	h := sidecartest.StartHarness(t, nil)
	r := &reloader{models: h.Models}
	before := r.fingerprint(nil) // taken when the reload starts; the build reads this content
	// Replaced after the build read it.
	sidecartest.WriteBytes(t, filepath.Join(h.Dir, "components.safetensors"), sidecartest.OtherStats(h.Scenario, 77).ComponentsBytes(t))
	r.sums = r.loaded(before)
	if !r.changed() {
		t.Fatal("a components file replaced during the build is taken as in service: it would never be loaded")
	}
	// Once that content is what the build read, nothing differs.
	r.sums = r.fingerprint(nil)
	if r.changed() {
		t.Error("changed() with nothing changed")
	}
}

// reloaderHarness runs the reloader of reload.go on a harness's files until
// the test ends, with a SIGHUP channel of the test's.
func runReloader(t *testing.T, h *sidecartest.Harness) chan<- os.Signal {
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
	fams := sidecartest.Scrape(t, h)
	success, _ = sidecartest.MetricValue(fams, "react_config_reloads_total", map[string]string{"result": "success"})
	failure, _ = sidecartest.MetricValue(fams, "react_config_reloads_total", map[string]string{"result": "failure"})
	ok, _ = sidecartest.MetricValue(fams, "react_config_last_reload_successful", nil)
	return
}

// answers reports whether the single model's default answer is sc's.
func answers(h *sidecartest.Harness, sc *faketriton.Scenario, preset string, weights []float64) error {
	ctx := context.Background()
	if preset != "" {
		ctx = metadata.NewOutgoingContext(ctx, metadata.Pairs("react-preset", preset))
	}
	resp, err := h.Client.ModelInfer(ctx, sidecartest.CtlRequest("single", "r", sidecartest.CtlBatch))
	if err != nil {
		return err
	}
	return sidecartest.CheckLogits(sc, "a", weights, sidecartest.CtlBatch, resp.GetRawOutputContents()[0])
}

// TestReloaderFiles: the reloader reloads when a file is replaced by an
// atomic rename and on SIGHUP; a corrupt file leaves the old state serving
// and drops react_config_last_reload_successful to 0.
func TestReloaderFiles(t *testing.T) {
	h := sidecartest.StartHarness(t, nil)
	hup := runReloader(t, h)
	metrics := h.Metrics.Handler()
	wait := func(what string, cond func(success, failure, ok float64) bool) {
		t.Helper()
		sidecartest.WaitFor(t, 10*time.Second, what, func() bool { return cond(reloads(t, metrics)) })
	}

	// A forced reload with nothing changed succeeds; once it is done the
	// watches are in place.
	hup <- syscall.SIGHUP
	wait("the SIGHUP reload", func(s, f, ok float64) bool { return s == 1 && ok == 1 })

	// (a) The components file replaced by an atomic rename.
	sc2 := sidecartest.OtherStats(h.Scenario, 42)
	sidecartest.WriteBytes(t, filepath.Join(h.Dir, "components.safetensors"), sc2.ComponentsBytes(t))
	wait("the reload of new components", func(s, f, ok float64) bool { return s == 2 })
	if err := answers(h, sc2, "", []float64{1, 0, 0}); err != nil {
		t.Errorf("after new components: %v", err)
	}

	// (b) A corrupt one: the reload fails, the old state serves.
	sidecartest.WriteBytes(t, filepath.Join(h.Dir, "components.safetensors"), sidecartest.CorruptComponents(t, h.Scenario))
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
	sidecartest.WriteBytes(t, filepath.Join(h.Dir, "components.safetensors"), h.Scenario.ComponentsBytes(t))
	c := h.Config
	c.Presets = map[string]string{"b_first": "a=0.2,b=0.8", "c_only": "c=1"}
	sidecartest.WriteFile(t, h.ConfigPath, c.YAML())
	wait("the reload of the new configuration", func(s, f, ok float64) bool { return s >= 3 && ok == 1 })
	sidecartest.WaitFor(t, 10*time.Second, "the new preset", func() bool { return answers(h, h.Scenario, "c_only", []float64{0, 0, 1}) == nil })
	if err := answers(h, h.Scenario, "", []float64{1, 0, 0}); err != nil {
		t.Errorf("after the repair: %v", err)
	}

	// (d) An invalid configuration file: the reload fails, the old state
	// serves.
	_, f0, _ := reloads(t, metrics)
	sidecartest.WriteFile(t, h.ConfigPath, "triton: [\n")
	wait("the failed reload of a broken file", func(s, f, ok float64) bool { return f == f0+1 && ok == 0 })
	if err := answers(h, h.Scenario, "c_only", []float64{0, 0, 1}); err != nil {
		t.Errorf("after a broken configuration: %v", err)
	}
}

// TestReloaderConfigMap: a Kubernetes ConfigMap update (a new timestamped
// directory, and the ..data symlink swapped by renaming ..data_tmp over it)
// reloads the configuration and the components.
func TestReloaderConfigMap(t *testing.T) {
	h := sidecartest.StartHarness(t, func(c *sidecartest.CtlConfig) { c.ConfigMap = true })
	hup := runReloader(t, h)
	metrics := h.Metrics.Handler()
	hup <- syscall.SIGHUP
	sidecartest.WaitFor(t, 10*time.Second, "the SIGHUP reload", func() bool { s, _, _ := reloads(t, metrics); return s == 1 })

	swap := func(name string, sc *faketriton.Scenario, comps []byte, c sidecartest.CtlConfig) {
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

	sc2 := sidecartest.OtherStats(h.Scenario, 5)
	c := h.Config
	c.Presets = map[string]string{"b_first": "a=0.2,b=0.8", "c_only": "c=1"}
	swap("..2026_01_02_00_00_00.000000002", sc2, sc2.ComponentsBytes(t), c)
	sidecartest.WaitFor(t, 10*time.Second, "the ConfigMap update", func() bool { return answers(h, sc2, "c_only", []float64{0, 0, 1}) == nil })
	if s, _, ok := reloads(t, metrics); s != 2 || ok != 1 {
		t.Errorf("after the ConfigMap update: %v successes, gauge %v", s, ok)
	}
	if err := answers(h, sc2, "", []float64{1, 0, 0}); err != nil {
		t.Error(err)
	}

	// An update with a corrupt components file: kept out of service.
	swap("..2026_01_03_00_00_00.000000003", h.Scenario, sidecartest.CorruptComponents(t, h.Scenario), h.Config)
	sidecartest.WaitFor(t, 10*time.Second, "the failed ConfigMap update", func() bool { _, f, ok := reloads(t, metrics); return f == 1 && ok == 0 })
	if err := answers(h, sc2, "c_only", []float64{0, 0, 1}); err != nil {
		t.Errorf("after a corrupt update: %v", err)
	}
}

// TestCommandReload runs the whole command (NewCommand) with a SIGHUP
// channel of the test's, and follows a reload through its metrics
// endpoint.
func TestCommandReload(t *testing.T) {
	sc := faketriton.NewScenario(7, 4, sidecartest.CtlTasks...)
	fake := faketriton.Start(t, sidecartest.CtlModels(sc)...)
	dir := t.TempDir()
	sc.WriteComponents(t, dir, "components.safetensors")
	c := sidecartest.CtlConfig{TritonGRPC: fake.Addr, TritonHTTP: testutil.ClosedAddr(t), Components: "components.safetensors",
		DefaultPreference: "a=1", MetricsListen: "127.0.0.1:0", LogFormat: "json"}
	cfgPath := filepath.Join(dir, "config.yaml")
	sidecartest.WriteFile(t, cfgPath, c.YAML())

	ctx, cancel := context.WithCancel(context.Background())
	hup := make(chan os.Signal, 1)
	stderr := &sidecartest.SyncBuffer{}
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
	sidecartest.WaitFor(t, 10*time.Second, "the sidecar ready in the log", func() bool {
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
	client := tritonpb.NewGRPCInferenceServiceClient(sidecartest.Dial(t, grpcAddr))
	scrapeHTTP := func() (success, failure, ok float64) {
		t.Helper()
		resp, err := http.Get("http://" + metricsAddr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		fams := sidecartest.ParseMetrics(t, resp.Body)
		success, _ = sidecartest.MetricValue(fams, "react_config_reloads_total", map[string]string{"result": "success"})
		failure, _ = sidecartest.MetricValue(fams, "react_config_reloads_total", map[string]string{"result": "failure"})
		ok, _ = sidecartest.MetricValue(fams, "react_config_last_reload_successful", nil)
		return
	}
	infer := func(sc *faketriton.Scenario) error {
		resp, err := client.ModelInfer(context.Background(), sidecartest.CtlRequest("single", "cmd", sidecartest.CtlBatch))
		if err != nil {
			return err
		}
		return sidecartest.CheckLogits(sc, "a", []float64{1, 0, 0}, sidecartest.CtlBatch, resp.GetRawOutputContents()[0])
	}
	if err := infer(sc); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := scrapeHTTP(); ok != 1 {
		t.Errorf("react_config_last_reload_successful = %v at start", ok)
	}

	hup <- syscall.SIGHUP
	sidecartest.WaitFor(t, 10*time.Second, "the SIGHUP reload", func() bool { s, _, _ := scrapeHTTP(); return s == 1 })

	sidecartest.WriteBytes(t, filepath.Join(dir, "components.safetensors"), sidecartest.CorruptComponents(t, sc))
	sidecartest.WaitFor(t, 10*time.Second, "the failed reload", func() bool { _, f, ok := scrapeHTTP(); return f == 1 && ok == 0 })
	if err := infer(sc); err != nil {
		t.Errorf("after a failed reload: %v", err)
	}

	sc2 := sidecartest.OtherStats(sc, 11)
	sidecartest.WriteBytes(t, filepath.Join(dir, "components.safetensors"), sc2.ComponentsBytes(t))
	sidecartest.WaitFor(t, 10*time.Second, "the reload of new components", func() bool { s, _, ok := scrapeHTTP(); return s == 2 && ok == 1 })
	if err := infer(sc2); err != nil {
		t.Errorf("after new components: %v", err)
	}

	// Triton's address cannot change without a restart, nor can the
	// feedback window (one per process): the old ones stay, with a
	// warning. The log level does change.
	c2 := c
	c2.TritonGRPC = testutil.ClosedAddr(t)
	c2.LogLevel = "error"
	c2.Sections = "feedback:\n  max_entries: 7\n"
	sidecartest.WriteFile(t, cfgPath, c2.YAML())
	sidecartest.WaitFor(t, 10*time.Second, "the reload of the new configuration", func() bool { s, _, ok := scrapeHTTP(); return s == 3 && ok == 1 })
	for _, setting := range []string{"triton.grpc", "feedback"} {
		if !strings.Contains(stderr.String(), "needs a restart") || !strings.Contains(stderr.String(), `"setting":"`+setting+`"`) {
			t.Errorf("no restart warning for %s in the log:\n%s", setting, stderr.String())
		}
	}
	if capacity := windowCapacity(t, metricsAddr); capacity != float64(config.DefaultFeedbackMaxEntries) {
		t.Errorf("the window's capacity is %v after a reload that changed feedback.max_entries, want the %d it started with",
			capacity, config.DefaultFeedbackMaxEntries)
	}
	if err := infer(sc2); err != nil {
		t.Errorf("after a reload that changes triton.grpc: %v", err)
	}
	sighups := strings.Count(stderr.String(), "SIGHUP: reloading")
	hup <- syscall.SIGHUP
	sidecartest.WaitFor(t, 10*time.Second, "the second SIGHUP reload", func() bool { s, _, _ := scrapeHTTP(); return s == 4 })
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
	h := sidecartest.StartHarness(t, nil)
	r := &reloader{models: h.Models, metrics: h.Metrics, log: slog.New(slog.NewTextHandler(h.Log, nil)), level: new(slog.LevelVar)}
	r.sums = r.fingerprint(nil)
	if r.changed() {
		t.Fatal("changed right after fingerprinting")
	}
	sidecartest.OtherStats(h.Scenario, 3).WriteComponents(t, h.Dir, "moved.safetensors")
	c := h.Config
	c.Components = "moved.safetensors"
	sidecartest.WriteFile(t, h.ConfigPath, c.YAML())
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

// TestReloadTypoNotRetried: a reload whose model name Triton's repository
// does not have fails once, is not tried again by itself, and the next
// change of the file is.
func TestReloadTypoNotRetried(t *testing.T) {
	defer func(d time.Duration) { reloadRetry = d }(reloadRetry)
	reloadRetry = 50 * time.Millisecond
	h := sidecartest.StartHarness(t, nil)
	hup := runReloader(t, h)
	metrics := h.Metrics.Handler()
	sidecartest.WriteFile(t, h.ConfigPath, strings.Replace(h.Config.YAML(), "model: head_c", "model: head_cc", 1))
	hup <- syscall.SIGHUP
	sidecartest.WaitFor(t, 10*time.Second, "the failed reload", func() bool { _, f, ok := reloads(t, metrics); return f >= 1 && ok == 0 })
	indexCalls := h.Fake.IndexCalls()
	time.Sleep(20 * reloadRetry)
	if _, f, _ := reloads(t, metrics); f != 1 || h.Fake.IndexCalls() != indexCalls {
		t.Errorf("a typo was tried again: %v failures, %d index calls more", f, h.Fake.IndexCalls()-indexCalls)
	}
	if !strings.Contains(h.Log.String(), `head_cc\" is not in the model repository`) || !strings.Contains(h.Log.String(), "retry=false") {
		t.Errorf("the log does not say why:\n%s", h.Log.String())
	}
	sidecartest.WriteFile(t, h.ConfigPath, h.Config.YAML())
	sidecartest.WaitFor(t, 10*time.Second, "the fixed reload", func() bool { s, _, ok := reloads(t, metrics); return s >= 1 && ok == 1 })
}

// windowCapacity reads the feedback window's capacity from a metrics
// listener.
func windowCapacity(t *testing.T, addr string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	v, ok := sidecartest.MetricValue(sidecartest.ParseMetrics(t, resp.Body), feedback.MetricCapacity, nil)
	if !ok {
		t.Fatalf("no %s", feedback.MetricCapacity)
	}
	return v
}
