package model

import (
	"fmt"
	"os"
	"testing"

	"github.com/mergectl/react-triton/react"
	// The cuda backend, in a build with the cuda tag.
	_ "github.com/mergectl/react-triton/react/cudadevice"
)

// TestMain runs the package's tests on the linear algebra backend
// REACT_TEST_BACKEND names (default: gonum's pure Go, which UseBackend is
// never asked to change): bench/gpu.sh sets cuda, so that a model's
// corrections run on the GPU against the same float64 references.
func TestMain(m *testing.M) {
	if name := os.Getenv("REACT_TEST_BACKEND"); name != "" {
		got, err := react.UseBackend(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "backend/model tests:", err)
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "backend/model tests: linear algebra backend", got)
	}
	os.Exit(m.Run())
}
