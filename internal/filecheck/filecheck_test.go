package filecheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRegular(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{file, ""},
		{dir, dir + " is not a regular file"},
		{filepath.Join(dir, "missing"), "cannot read " + filepath.Join(dir, "missing") + ": no such file or directory"},
	} {
		if got := Regular(tc.path); got != tc.want {
			t.Errorf("Regular(%s) = %q, want %q", tc.path, got, tc.want)
		}
	}
	if os.Geteuid() != 0 { // root reads anything
		locked := filepath.Join(dir, "locked")
		if err := os.WriteFile(locked, nil, 0o000); err != nil {
			t.Fatal(err)
		}
		if got := Regular(locked); !strings.HasSuffix(got, "permission denied") {
			t.Errorf("Regular(unreadable) = %q", got)
		}
	}
}
