// Package mattest compares matrices for the tests of react and of the
// packages under it: by the relative Frobenius error, which react's tests
// bound throughout.
package mattest

import (
	"testing"

	"gonum.org/v1/gonum/mat"
)

// RelErr returns ‖got − want‖_F / ‖want‖_F (or the absolute error when
// want is 0).
func RelErr(got, want mat.Matrix) float64 {
	var diff mat.Dense
	diff.Sub(got, want)
	n := mat.Norm(want, 2)
	if n == 0 {
		return mat.Norm(&diff, 2)
	}
	return mat.Norm(&diff, 2) / n
}

// AssertClose fails t, naming what, when RelErr(got, want) exceeds tol
// (or is NaN).
func AssertClose(t testing.TB, what string, got, want mat.Matrix, tol float64) {
	t.Helper()
	if e := RelErr(got, want); !(e <= tol) {
		t.Errorf("%s: relative error %.3g > %.3g\ngot  %v\nwant %v", what, e, tol,
			mat.Formatted(got, mat.Squeeze(), mat.Excerpt(3)), mat.Formatted(want, mat.Squeeze(), mat.Excerpt(3)))
	}
}
