//go:build cuda

package cudadevice

import (
	"fmt"
	"os"
	"testing"

	"github.com/mergectl/react-triton/react"
)

// TestMain runs the package's tests on the backend REACT_TEST_BACKEND
// names, by default react.BackendAuto: the device when one opens (the
// tests that need it skip otherwise), as react's tests do. bench/gpu.sh
// sets cuda, CI too under the emulator.
func TestMain(m *testing.M) {
	name := os.Getenv("REACT_TEST_BACKEND")
	if name == "" {
		name = react.BackendAuto
	}
	got, err := react.UseBackend(name)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cudadevice tests:", err)
		os.Exit(2)
	}
	fmt.Fprintln(os.Stderr, "cudadevice tests: linear algebra backend", got)
	if why := react.BackendFallback(); why != "" {
		fmt.Fprintln(os.Stderr, "cudadevice tests:", why)
	}
	os.Exit(m.Run())
}
