package calibrate

import (
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
