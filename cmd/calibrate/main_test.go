package main

import (
	"errors"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestExitCodes builds the binary and checks that calibrate's exit codes
// reach the shell.
func TestExitCodes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "calibrate")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	missing := filepath.Join(t.TempDir(), "missing.safetensors")
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"--help"}, 0},
		{[]string{"inspect", "--bogus"}, 2},
		{[]string{"inspect", missing}, 1},
	} {
		err := exec.Command(bin, tc.args...).Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tc.code {
			t.Errorf("calibrate %v: exit %d, want %d", tc.args, code, tc.code)
		}
	}
}
