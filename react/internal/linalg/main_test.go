package linalg_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/mergectl/react-triton/react"
	// The cuda backend, in a build with the cuda tag.
	_ "github.com/mergectl/react-triton/react/cudadevice"
)

// TestMain runs the tests on the linear-algebra backend react's tests run
// on: REACT_TEST_BACKEND, else the best one built in, whose BLAS the
// kernels call.
func TestMain(m *testing.M) {
	backend := os.Getenv("REACT_TEST_BACKEND")
	if backend == "" {
		backend = react.BackendAuto
	}
	if _, err := react.UseBackend(backend); err != nil {
		fmt.Fprintln(os.Stderr, "linalg tests:", err)
		os.Exit(2)
	}
	os.Exit(m.Run())
}
