//go:build openblas

package react

import "testing"

// TestOpenBLASInUse: a build with the openblas tag runs its tests on
// OpenBLAS (unless REACT_TEST_BACKEND says otherwise), so that CI's second
// run of the package really tests that backend.
func TestOpenBLASInUse(t *testing.T) {
	if want := envBackend(); want == BackendAuto || want == BackendOpenBLAS {
		if CurrentBackend() != BackendOpenBLAS {
			t.Fatalf("backend %q in a build with the openblas tag, want %q", CurrentBackend(), BackendOpenBLAS)
		}
	}
}
