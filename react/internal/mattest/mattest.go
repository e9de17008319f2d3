// Package mattest holds the matrices of the tests of react and of the
// packages under it: their comparison by the relative Frobenius error,
// which react's tests bound throughout, and generic statistics built
// fast (Synthetic), which need nothing of react.
package mattest

import (
	"math/rand/v2"
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

// SyntheticTask is one task's statistics from Synthetic.
type SyntheticTask struct {
	S, WOrth *mat.Dense
	G        *mat.SymDense
}

// Synthetic returns the statistics of T tasks of dimension d whose values
// only need to be generic: S_t random, W_orth_t a permutation, G_t
// symmetric and strictly diagonally dominant (so positive definite),
// built in O(T·D²). The same d and tasks give the same values.
func Synthetic(d, tasks int) []SyntheticTask {
	rng := rand.New(rand.NewPCG(uint64(d), uint64(tasks)))
	out := make([]SyntheticTask, tasks)
	for k := range out {
		s, w, g := mat.NewDense(d, d, nil), mat.NewDense(d, d, nil), mat.NewSymDense(d, nil)
		perm := rng.Perm(d)
		for i := range d {
			w.Set(i, perm[i], 1)
			for j := range d {
				s.Set(i, j, rng.NormFloat64())
			}
			for j := i + 1; j < d; j++ {
				g.SetSym(i, j, (rng.Float64()-0.5)/float64(d))
			}
			g.SetSym(i, i, 2+rng.Float64())
		}
		out[k] = SyntheticTask{S: s, WOrth: w, G: g}
	}
	return out
}
