package calibrate

import (
	"strconv"
	"strings"
	"testing"
)

// TestEvalErrors checks that calibrate eval refuses bad flags and inputs
// before it contacts Triton (the address here is never dialled).
func TestEvalErrors(t *testing.T) {
	comps := "testdata/fixture.safetensors"
	base := []string{"eval", "--triton", "127.0.0.1:1", "--data", t.TempDir(), "--components", comps}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"eval", "--data", "d", "--components", comps}, ExitUsage, "--triton is required"},
		{[]string{"eval", "--triton", "x:1", "--components", comps}, ExitUsage, "--data is required"},
		{[]string{"eval", "--triton", "x:1", "--data", "d"}, ExitUsage, "--components is required"},
		{append(base, "--limit", "-1"), ExitUsage, "--limit must be ≥ 0"},
		{append(base, "--head", "head"), ExitUsage, "want a pattern with {task}"},
		{append(base, "--normalizations", "median"), ExitUsage, `--normalizations: unknown normalization "median"`},
		{append(base, "--betas", "1,-1"), ExitUsage, "--betas: invalid beta -1"},
		// The spellings before --betas and --normalizations still work,
		// with a notice.
		{append(base, "--normalize", "median"), ExitUsage, "eval --normalize is deprecated: use --normalizations"},
		{append(base, "--beta", "-1"), ExitUsage, "--betas: invalid beta -1"},
		{append(base, "--progress", "sometimes"), ExitUsage, "want auto, always, log or never"},
		{append(base, "--aggregation", "mean"), ExitUsage, `--aggregation "mean": want react, naive or polar`},
		{append(base, "--sidecar-model", "X={task}"), ExitUsage, "--sidecar-model needs --sidecar"},
		{append(base, "--sidecar", "x:1", "--sidecar-tolerance", "-1"), ExitUsage, "--sidecar-tolerance must be ≥ 0"},
		{base, ExitFailure, "--data: task alpha: no inputs: neither "},
		{[]string{"eval", "--triton", "x:1", "--data", "d", "--components", "missing.safetensors"}, ExitFailure, "--components missing.safetensors"},
	} {
		r := run(t, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("calibrate %s: exit %d, stderr %q; want exit %d and %q", strings.Join(tc.args, " "), r.code, r.stderr, tc.code, tc.want)
		}
	}
}

// TestEvalReportsEveryProblem feeds calibrate eval several bad flags at
// once and checks that it reports every one, in one usage error: first
// the flags alone, without reading a file; then, with the components file
// read, the flags that name its tasks and labels, before any task's data
// is read (the data directory here is empty).
func TestEvalReportsEveryProblem(t *testing.T) {
	comps := "testdata/fixture.safetensors"
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{{
		name: "the flags alone",
		args: []string{"eval", "--limit", "-1", "--batch", "0", "--head", "head", "--normalizations", "median,mean",
			"--aggregation", "mean,polar", "--betas", "1,-1", "--sidecar-model", "X={task}", "--sidecar-tolerance", "-1",
			"--progress", "sometimes"},
		want: []string{
			`--progress "sometimes": want auto, always, log or never`,
			"--triton is required",
			"--data is required",
			"--components is required",
			"--limit must be ≥ 0, got -1",
			"--batch and --in-flight must be > 0",
			`--head "head": want a pattern with {task}`,
			"--sidecar-model needs --sidecar",
			"--sidecar-tolerance must be ≥ 0, got -1",
			`--normalizations: unknown normalization "median" (want "sum" or "mean")`,
			`--aggregation "mean": want react, naive or polar`,
			"--betas: invalid beta -1: want a finite number ≥ 0",
		},
	}, {
		name: "the flags that name tasks and labels",
		args: []string{"eval", "--triton", "127.0.0.1:1", "--data", t.TempDir(), "--components", comps, "--sidecar", "127.0.0.1:1",
			"--sidecar-model", "Nope={task}", "--sidecar-model", "=", "--sidecar-model", "ok_{task}",
			"--set", "bogus", "--set", "equal", "--set", "one-hot:zeta"},
		want: []string{
			`--sidecar-model "Nope={task}": no --components is labelled "Nope"`,
			`--sidecar-model "=": no model`,
			`--set: preference set "bogus": unknown kind "bogus" (want equal, priority, one-hot, pairwise, simplex or list)`,
			`--set: preference set "one-hot:zeta": one-hot takes no arguments`,
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, tc.args...)
			want := "calibrate: " + strconv.Itoa(len(tc.want)) + " problems:\n  " + strings.Join(tc.want, "\n  ") + "\n"
			if r.code != ExitUsage || !strings.HasPrefix(r.stderr, want) {
				t.Errorf("calibrate %s: exit %d, stderr:\n%s\nwant exit %d and:\n%s", strings.Join(tc.args, " "), r.code, r.stderr, ExitUsage, want)
			}
		})
	}
}
