package calibrate

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// runCtx runs the calibrate command in-process with args under ctx.
func runCtx(ctx context.Context, args ...string) result {
	var out, errb bytes.Buffer
	root := NewCommand(&out, &errb)
	root.SetArgs(args)
	code := ExitOK
	if err := root.ExecuteContext(ctx); err != nil {
		errb.WriteString(err.Error())
		code = ExitFailure
	}
	return result{out.String(), errb.String(), code}
}

// zooArgs writes inputs of tasks a (37 samples) and b (23) and returns the
// arguments of a fit of them on the fake zoo at addr, writing out.
func zooArgs(t *testing.T, addr, out string) []string {
	t.Helper()
	dir := t.TempDir()
	writeInputs(t, dir, "a", 37, 2, 3)
	writeInputs(t, dir, "b", 23, 2, 3)
	return []string{"fit", "--triton", addr, "--inputs", dir, "--backbone-model", "merged", "--chunk", "4", "--in-flight", "2",
		"--expert", "a=expert_a", "--expert", "b=expert_b", "--out", out, "--checkpoint-every", "1", "--quiet"}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFitResume interrupts a fit half-way, as SIGINT does, and checks that
// --resume finishes it with the same file, bit for bit, as an uninterrupted
// fit, sending only the samples not yet in the checkpoint.
func TestFitResume(t *testing.T) {
	f := fakeZoo()
	addr := startFakeServer(t, f)
	dir := t.TempDir()
	want := filepath.Join(dir, "want.safetensors")
	args := zooArgs(t, addr, want)
	mustRun(t, args...)
	full := f.calls

	got := filepath.Join(dir, "got.safetensors")
	args[len(args)-4] = got // --out
	ctx, cancel := context.WithCancel(context.Background())
	f.mu.Lock()
	f.calls = 0
	f.mu.Unlock()
	f.hook = func(calls int) error {
		if calls == full/2 {
			cancel() // Ctrl-C half-way, in task a... or b
		}
		return nil
	}
	r := runCtx(ctx, args...)
	f.hook = nil
	if r.code == ExitOK || !strings.Contains(r.stderr, "interrupted at sample") || !strings.Contains(r.stderr, "--resume") {
		t.Fatalf("interrupted fit: exit %d, stderr %q", r.code, r.stderr)
	}
	if _, err := os.Stat(got); err == nil {
		t.Fatal("an interrupted fit wrote its output")
	}
	if r := run(t, args...); r.code != ExitFailure || !strings.Contains(r.stderr, "add --resume to continue it") {
		t.Errorf("a fit over a checkpoint without --resume: exit %d, stderr %q", r.code, r.stderr)
	}
	f.mu.Lock()
	f.calls = 0
	f.mu.Unlock()
	mustRun(t, append(args, "--resume")...)
	if !bytes.Equal(readFile(t, got), readFile(t, want)) {
		t.Error("the resumed fit's file differs from the uninterrupted fit's")
	}
	if f.calls >= full {
		t.Errorf("the resumed fit sent %d requests, the whole fit %d: it started over", f.calls, full)
	}
	if _, err := os.Stat(got + ".ckpt"); err == nil {
		t.Error("the checkpoints are left after the fit succeeded")
	}
}

// TestFitResumeOtherRun refuses a checkpoint of a fit with other settings.
func TestFitResumeOtherRun(t *testing.T) {
	f := fakeZoo()
	addr := startFakeServer(t, f)
	out := filepath.Join(t.TempDir(), "c.safetensors")
	args := zooArgs(t, addr, out)
	f.models["expert_b"].inferErr = status.Error(codes.InvalidArgument, "unexpected inference input 'images'")
	r := run(t, args...)
	if r.code != ExitFailure || !strings.Contains(r.stderr, `task b: expert of task b model "expert_b": samples 0 to 4 of`) ||
		!strings.Contains(r.stderr, "saved in "+out+".ckpt/b.safetensors") {
		t.Fatalf("a permanent error: exit %d, stderr %q", r.code, r.stderr)
	}
	f.models["expert_b"].inferErr = nil
	r = run(t, append(args, "--resume", "--chunk", "3")...)
	if r.code != ExitFailure || !strings.Contains(r.stderr, "checkpoint "+out+".ckpt/a.safetensors is of another run") {
		t.Errorf("resume with another chunk: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestFitRetry makes the server unavailable for a while: the fit retries
// and gives the same file as without failures; with a bound too short it
// stops, keeping its checkpoint.
func TestFitRetry(t *testing.T) {
	f := fakeZoo()
	addr := startFakeServer(t, f)
	dir := t.TempDir()
	want := filepath.Join(dir, "want.safetensors")
	args := zooArgs(t, addr, want)
	mustRun(t, args...)

	var failures atomic.Int32
	f.hook = func(calls int) error {
		if calls >= 6 && failures.Add(1) <= 5 {
			return status.Error(codes.Unavailable, "restarting")
		}
		return nil
	}
	got := filepath.Join(dir, "got.safetensors")
	args[len(args)-4] = got
	r := mustRun(t, args...)
	if !bytes.Equal(readFile(t, got), readFile(t, want)) {
		t.Error("the fit with retries differs from the one without")
	}
	if !strings.Contains(r.stderr, "calibrate: retrying in ") {
		t.Errorf("no retry reported: %q", r.stderr)
	}

	f.hook = func(int) error { return status.Error(codes.DeadlineExceeded, "slow") }
	r = run(t, append(args, "--retry-max-wait", "300ms")...)
	if r.code != ExitFailure || !strings.Contains(r.stderr, "still failing after retrying for 300ms") {
		t.Errorf("retries past the bound: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestFitPrintConfig prints the configuration a file and flags make, and
// runs nothing.
func TestFitPrintConfig(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "calibrate.yaml")
	if err := os.WriteFile(file, []byte("embeddings: emb\nout: c.safetensors\nbeta: 0.5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := mustRun(t, "fit", "--config", file, "--beta", "0.25", "--limit", "10", "--print-config")
	for _, want := range []string{"embeddings: " + filepath.Join(dir, "emb") + "\n", "beta: 0.25\n", "limit: 10\n", "retry_max_wait: 5m0s\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("--print-config lacks %q:\n%s", want, r.stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "c.safetensors.ckpt")); err == nil {
		t.Error("--print-config ran the fit")
	}
	r = run(t, "fit", "--config", file, "--fraction", "2")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "sample.fraction: must be in (0, 1], or 0 for every sample, got 2 (from --fraction)") {
		t.Errorf("bad --fraction: exit %d, stderr %q", r.code, r.stderr)
	}
}
