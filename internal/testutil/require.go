package testutil

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// E2E is the environment variable that turns a missing prerequisite into a
// failure: scripts/test.sh (and so CI) sets it to 1, so that a run cannot
// pass by skipping.
const E2E = "REACT_E2E"

// Require skips t with the message, or fails it when REACT_E2E=1, unless ok:
// for what a test needs from outside the package (a real Triton, the
// project's Python, data that make setup fetches).
func Require(t testing.TB, ok bool, format string, args ...any) {
	t.Helper()
	if ok {
		return
	}
	msg := fmt.Sprintf(format, args...)
	if os.Getenv(E2E) == "1" {
		t.Fatalf("%s (and %s=1: this is a failure)", msg, E2E)
		return
	}
	t.Skip(msg)
}

// Env returns the environment variables' values, or skips or fails t as
// Require does when one is unset: the addresses scripts/test.sh exports.
func Env(t testing.TB, names ...string) []string {
	t.Helper()
	values := make([]string, len(names))
	var unset []string
	for i, name := range names {
		values[i] = os.Getenv(name)
		if values[i] == "" {
			unset = append(unset, name)
		}
	}
	Require(t, len(unset) == 0, "%s not set: run the tests through scripts/test.sh, which starts Triton", strings.Join(unset, ", "))
	return values
}
