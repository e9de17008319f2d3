package sidecar

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/spf13/pflag"

	"github.com/mergectl/react-triton/problem"
	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/controllable"
	"github.com/mergectl/react-triton/sidecar/frontdoor"
	"github.com/mergectl/react-triton/sidecar/metrics"
	"github.com/mergectl/react-triton/sidecar/sampling"
	"github.com/mergectl/react-triton/triton"
)

// tritonTLS returns the TLS configuration to Triton, nil when disabled.
func tritonTLS(c config.TLS) (*tls.Config, error) {
	if !c.Enabled {
		return nil, nil
	}
	cfg, err := triton.TLSFiles{CAFile: c.CAFile, CertFile: c.CertFile, KeyFile: c.KeyFile,
		ServerName: c.ServerName, InsecureSkipVerify: c.InsecureSkipVerify}.Config()
	if err != nil {
		return nil, fmt.Errorf("triton.tls: %w", err)
	}
	return cfg, nil
}

// reloadRetry is how long the reloader waits before trying again a reload
// that failed only because Triton or a model was not ready (a variable for
// tests).
var reloadRetry = 10 * time.Second

// retryAfter returns the timer of a retry when transient is true, nil
// otherwise.
func (r *reloader) retryAfter(transient bool) <-chan time.Time {
	if !transient {
		return nil
	}
	return time.After(reloadRetry)
}

// reloadDebounce is how long the reloader waits after a file event for
// more events, so that one edit (or one ConfigMap update, several renames)
// reloads once.
const reloadDebounce = 250 * time.Millisecond

// reloader reloads the configuration and the components files on SIGHUP
// and when any of them changes on disk. It watches the directories that
// hold the files, not the files themselves, so that it sees a file
// replaced by an atomic rename and a Kubernetes ConfigMap update (a symlink
// swap of the ..data directory); it then compares the files' contents with
// the ones in service and reloads only when they differ.
type reloader struct {
	flags   *pflag.FlagSet
	models  *controllable.Models
	metrics *metrics.Metrics
	log     *slog.Logger
	level   *slog.LevelVar
	// guard takes the management section of each configuration that
	// reloads; certs, when not nil, reloads the listeners' TLS files on
	// SIGHUP (it watches them itself).
	guard *frontdoor.Management
	certs *frontdoor.CertStore
	// sampler takes the sampling section of each configuration that
	// reloads (nil: none).
	sampler *sampling.Sampler

	// sums describe the files in service, by path.
	sums map[string]fileState
}

// run serves reloads until ctx is done. hup may be nil.
func (r *reloader) run(ctx context.Context, hup <-chan os.Signal) {
	r.sums = r.fingerprint(nil)
	w, err := fsnotify.NewWatcher()
	if err != nil {
		r.log.Warn("reload on file change disabled; SIGHUP still reloads", "error", err)
		w = nil
	}
	var events <-chan fsnotify.Event
	var watchErrs <-chan error
	if w != nil {
		defer w.Close()
		r.watch(w)
		events, watchErrs = w.Events, w.Errors
	}
	var debounce, retry <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			r.log.Info("SIGHUP: reloading")
			if r.certs != nil {
				r.certs.ReloadAndLog("SIGHUP")
			}
			retry = r.retryAfter(r.reload(ctx, true))
			if w != nil {
				r.watch(w)
			}
		case <-retry:
			r.log.Info("trying the failed reload again")
			retry = r.retryAfter(r.reload(ctx, false))
		case ev := <-events:
			if r.relevant(ev) {
				debounce = time.After(reloadDebounce)
			}
		case err := <-watchErrs:
			r.log.Warn("watching the configuration files", "error", err)
		case <-debounce:
			debounce = nil
			if r.changed() {
				r.log.Info("configuration or components file changed: reloading")
				retry = r.retryAfter(r.reload(ctx, false))
				r.watch(w)
			}
		}
	}
}

// files returns the files a reload reads: the configuration file, if any,
// the management token file, if any, and the components files in service.
func (r *reloader) files() []string {
	var files []string
	cfg := r.models.Config()
	if cfg.File != "" {
		files = append(files, cfg.File)
	}
	if cfg.Management.TokenFile != "" {
		files = append(files, cfg.Management.TokenFile)
	}
	return append(files, r.models.Files()...)
}

// watch watches the directories of the files in service.
func (r *reloader) watch(w *fsnotify.Watcher) {
	for _, f := range r.files() {
		dir := filepath.Dir(f)
		if err := w.Add(dir); err != nil {
			r.log.Warn("cannot watch for changes", "dir", dir, "error", err)
		}
	}
}

// fileState identifies a file's content cheaply: what os.Stat says (which
// follows symlinks, so a ConfigMap swap shows as another file), with the
// SHA-256 of the content computed only when that changes.
type fileState struct {
	size    int64
	modTime time.Time
	stat    any // os.FileInfo.Sys(): device and inode on Unix
	sum     [32]byte
	missing bool
}

// sameFile reports whether a and b describe the same file, unchanged.
func (a fileState) sameFile(b fileState) bool {
	return a.missing == b.missing && a.size == b.size && a.modTime.Equal(b.modTime) && reflect.DeepEqual(a.stat, b.stat)
}

// fingerprint describes the files in service. A file whose stat matches
// prev keeps its recorded hash; any other is hashed again. A file that
// cannot be read is missing.
func (r *reloader) fingerprint(prev map[string]fileState) map[string]fileState {
	out := make(map[string]fileState)
	for _, f := range r.files() {
		fi, err := os.Stat(f)
		if err != nil {
			out[f] = fileState{missing: true}
			continue
		}
		st := fileState{size: fi.Size(), modTime: fi.ModTime(), stat: fi.Sys()}
		if old, ok := prev[f]; ok && old.sameFile(st) {
			out[f] = old
			continue
		}
		sum, err := hashFile(f)
		if err != nil {
			out[f] = fileState{missing: true}
			continue
		}
		st.sum = sum
		out[f] = st
	}
	return out
}

// loaded describes the files of the configuration in service: each
// components file with the SHA-256 the build computed of the bytes it read,
// and the stat recorded in before (taken before the reload); the
// configuration file, and any file before does not describe, as before
// describes it, or as found now.
func (r *reloader) loaded(before map[string]fileState) map[string]fileState {
	checksums := r.models.Checksums()
	out := make(map[string]fileState)
	var unknown []string
	for _, f := range r.files() {
		st, ok := before[f]
		if hexSum, built := checksums[f]; built {
			if b, err := hex.DecodeString(hexSum); err == nil && len(b) == len(st.sum) {
				if !ok {
					// A new path: its stat now, with the hash of what was read.
					st = r.fingerprint(nil)[f]
				}
				copy(st.sum[:], b)
				st.missing = false
				ok = true
			}
		}
		if !ok {
			unknown = append(unknown, f)
			continue
		}
		out[f] = st
	}
	if len(unknown) > 0 {
		now := r.fingerprint(before)
		for _, f := range unknown {
			out[f] = now[f]
		}
	}
	return out
}

// hashFile returns the SHA-256 of a file's content, streamed.
func hashFile(path string) ([32]byte, error) {
	var sum [32]byte
	f, err := os.Open(path)
	if err != nil {
		return sum, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return sum, err
	}
	copy(sum[:], h.Sum(nil))
	return sum, nil
}

// changed reports whether a file's content differs from the one in
// service. It records what it found, so that a file only touched (same
// content) is not hashed again.
func (r *reloader) changed() bool {
	next := r.fingerprint(r.sums)
	differs := len(next) != len(r.sums)
	for f, st := range next {
		old, ok := r.sums[f]
		if !ok || old.missing != st.missing || old.sum != st.sum {
			differs = true
		}
	}
	if !differs {
		r.sums = next
	}
	return differs
}

// relevant reports whether a file event can concern a file in service: an
// event on the file's own name, or on a ConfigMap's "..data" symlink or
// timestamped directory (names starting with ".."). Other files in the same
// directories, such as logs written next to the configuration, are ignored.
func (r *reloader) relevant(ev fsnotify.Event) bool {
	base := filepath.Base(ev.Name)
	if strings.HasPrefix(base, "..") {
		return true
	}
	for _, f := range r.files() {
		if filepath.Base(f) == base && filepath.Dir(f) == filepath.Dir(ev.Name) {
			return true
		}
	}
	return false
}

// reload loads the configuration again and rebuilds the controllable
// models. On success the new state serves; on failure the old one keeps
// serving, the problems are logged and react_config_last_reload_successful
// drops to 0. forced reloads report even when nothing changed. It returns
// true when the reload failed only for transient reasons (Triton or a model
// not ready), which are worth trying again.
func (r *reloader) reload(ctx context.Context, forced bool) (transient bool) {
	sums := r.fingerprint(r.sums)
	old := r.models.Config()
	err := func() error {
		path := old.File
		cfg, err := config.Load(path, r.flags)
		if err != nil {
			return err
		}
		restart := needsRestart(old, cfg)
		// What a reload cannot change stays as it is, and says so.
		cfg.Triton.GRPC, cfg.Triton.HTTP, cfg.Triton.TLS = old.Triton.GRPC, old.Triton.HTTP, old.Triton.TLS
		cfg.Listen, cfg.Log.Format, cfg.LinAlg = old.Listen, old.Log.Format, old.LinAlg
		cfg.Server, cfg.Pprof, cfg.Feedback = old.Server, old.Pprof, old.Feedback
		policy, err := frontdoor.NewManagementPolicy(cfg.Management)
		if err != nil {
			return err
		}
		if err := r.models.Reload(ctx, cfg); err != nil {
			return err
		}
		if r.guard != nil {
			r.guard.Use(policy)
		}
		for _, what := range restart {
			r.log.Warn("changed setting needs a restart to take effect; the old value stays in use", "setting", what)
		}
		r.level.Set(parseLevel(cfg.Log.Level))
		if r.sampler != nil {
			configureSampling(ctx, r.sampler, cfg, r.log)
		}
		return nil
	}()
	// What is in service now: after a failure, the files as they were
	// before this reload (so that fixing them triggers the next one); after
	// a success, the components as the build read them (their SHA-256),
	// and the configuration file as it was before loading. A file replaced
	// while the build ran then differs from what is recorded, and the next
	// check reloads it.
	if err == nil {
		r.sums = r.loaded(sums)
	} else {
		r.sums = sums
	}
	r.metrics.Reloaded(err == nil)
	if err != nil {
		var be problem.List
		transient = errors.As(err, &be) && be.Transient()
		r.log.Error("reload failed; the previous configuration keeps serving", "error", err, "retry", transient)
		return transient
	}
	r.log.Info("reloaded", "controllable_models", len(r.models.Config().Models), "forced", forced)
	return false
}

// needsRestart lists the settings of next that differ from cur and that a
// reload does not apply: the listeners and their limits (server: the TLS
// files' contents reload by themselves), pprof, the upstream addresses and
// TLS, the log format, the linear algebra backend and the feedback window
// (one per process, kept across reloads with what it holds).
func needsRestart(cur, next *config.Config) []string {
	var out []string
	add := func(name string, a, b any) {
		if !reflect.DeepEqual(a, b) {
			out = append(out, name)
		}
	}
	add("triton.grpc", cur.Triton.GRPC, next.Triton.GRPC)
	add("triton.http", cur.Triton.HTTP, next.Triton.HTTP)
	add("triton.tls", cur.Triton.TLS, next.Triton.TLS)
	add("listen", cur.Listen, next.Listen)
	add("server", cur.Server, next.Server)
	add("pprof", cur.Pprof, next.Pprof)
	add("log.format", cur.Log.Format, next.Log.Format)
	add("linalg", cur.LinAlg, next.LinAlg)
	add("feedback", cur.Feedback, next.Feedback)
	return out
}
