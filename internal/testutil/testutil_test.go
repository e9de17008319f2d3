package testutil

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that records how a helper ended the test.
type recorder struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (r *recorder) Helper()          {}
func (r *recorder) Skip(args ...any) { r.skipped, r.msg = true, fmt.Sprint(args...) }
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed, r.msg = true, fmt.Sprintf(format, args...)
}
func (r *recorder) Fatal(args ...any) { r.failed, r.msg = true, fmt.Sprint(args...) }
func (r *recorder) Errorf(format string, args ...any) {
	r.failed, r.msg = true, fmt.Sprintf(format, args...)
}

func TestRequire(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ok       bool
		e2e      string
		skip     bool
		fail     bool
		contains string
	}{
		{"present", true, "1", false, false, ""},
		{"missing by hand", false, "", true, false, "no Triton"},
		{"missing in CI", false, "1", false, true, "REACT_E2E=1"},
		{"missing, another value", false, "0", true, false, "no Triton"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(E2E, tc.e2e)
			r := &recorder{TB: t}
			Require(r, tc.ok, "no %s", "Triton")
			if r.skipped != tc.skip || r.failed != tc.fail || !strings.Contains(r.msg, tc.contains) {
				t.Errorf("skipped %v failed %v %q, want skipped %v failed %v with %q", r.skipped, r.failed, r.msg, tc.skip, tc.fail, tc.contains)
			}
		})
	}
}

func TestEnv(t *testing.T) {
	t.Setenv(E2E, "1")
	t.Setenv("TESTUTIL_A", "a")
	t.Setenv("TESTUTIL_B", "")
	r := &recorder{TB: t}
	if got := Env(r, "TESTUTIL_A"); r.failed || len(got) != 1 || got[0] != "a" {
		t.Errorf("Env(A) = %q, failed %v", got, r.failed)
	}
	Env(r, "TESTUTIL_A", "TESTUTIL_B")
	if !r.failed || !strings.Contains(r.msg, "TESTUTIL_B") || strings.Contains(r.msg, "TESTUTIL_A") {
		t.Errorf("Env(A, B) with B unset: failed %v %q, want a failure naming B alone", r.failed, r.msg)
	}
}

func TestGolden(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "x.golden")
	r := &recorder{TB: t}
	Golden(r, path, []byte("x"))
	if !r.failed || !strings.Contains(r.msg, "-update") {
		t.Errorf("a missing golden file: failed %v %q, want a failure saying -update", r.failed, r.msg)
	}
	*Update = true
	Golden(&recorder{TB: t}, path, []byte("one\n"))
	*Update = false
	if b, err := os.ReadFile(path); err != nil || string(b) != "one\n" {
		t.Fatalf("-update wrote %q, %v", b, err)
	}
	r = &recorder{TB: t}
	Golden(r, path, []byte("one\n"))
	if r.failed {
		t.Errorf("the same output failed: %q", r.msg)
	}
	Golden(r, path, []byte("two\n"))
	if !r.failed || !strings.Contains(r.msg, "two") || !strings.Contains(r.msg, "one") {
		t.Errorf("a different output: failed %v %q, want both texts", r.failed, r.msg)
	}
}

func TestClosedAddr(t *testing.T) {
	addr := ClosedAddr(t)
	if _, _, err := net.SplitHostPort(addr); err != nil {
		t.Fatalf("ClosedAddr() = %q: %v", addr, err)
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Errorf("ClosedAddr() = %s, which accepted a connection", addr)
	}
}
