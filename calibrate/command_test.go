package calibrate

import (
	"strings"
	"testing"
)

func TestVersionFlag(t *testing.T) {
	r := mustRun(t, "--version")
	if !strings.HasPrefix(r.stdout, "calibrate ") || strings.Count(r.stdout, "\n") != 1 || r.stderr != "" {
		t.Errorf("calibrate --version: stdout %q, stderr %q", r.stdout, r.stderr)
	}
}
