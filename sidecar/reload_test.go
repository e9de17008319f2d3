package sidecar

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/mergectl/react-triton/sidecar/config"
)

// TestReloaderIgnoresOtherFiles: only events on the files in service, or on
// a ConfigMap's ..data entries, start a reload check; a log written next to
// the configuration does not (each check may hash large components files).
func TestReloaderIgnoresOtherFiles(t *testing.T) {
	cfg := &config.Config{File: "/etc/react/sidecar.yaml",
		Components: []config.Components{{Name: "c", Path: "/models/react/components.safetensors"}}}
	r := &reloader{models: &Models{}}
	r.models.state.Store(&modelsState{cfg: cfg})
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
	h := StartHarness(t, nil)
	h.Fake.SetReady("head_a", false)
	hup := runReloader(t, h)
	metrics := h.Metrics.Handler()
	hup <- syscall.SIGHUP
	WaitFor(t, 10*time.Second, "the failed reload", func() bool { _, f, ok := reloads(t, metrics); return f >= 1 && ok == 0 })
	h.Fake.SetReady("head_a", true)
	WaitFor(t, 10*time.Second, "the retried reload", func() bool { s, _, ok := reloads(t, metrics); return s == 1 && ok == 1 })
}

// TestReloaderRecordsWhatWasLoaded: a components file replaced while a
// reload's build ran (after the build read it) is not taken as in service:
// the reloader records the hash of the bytes the build read, so the next
// check sees the change and reloads it.
func TestReloaderRecordsWhatWasLoaded(t *testing.T) {
	h := StartHarness(t, nil)
	r := &reloader{models: h.Models}
	before := r.fingerprint(nil) // taken when the reload starts; the build reads this content
	// Replaced after the build read it.
	WriteBytes(t, filepath.Join(h.Dir, "components.safetensors"), OtherStats(h.Scenario, 77).ComponentsBytes(t))
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
