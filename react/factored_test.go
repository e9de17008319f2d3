package react

import (
	"errors"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestFactoredMatchesReference: the factored form answers a batch with
// A_p C_p⁻¹ z, and Form gives W_p, both against the float64 reference
// system built from the raw samples (an LU solve, independent of the
// Cholesky path), for several preferences and both normalisations.
func TestFactoredMatchesReference(t *testing.T) {
	const d = 24
	samples := threeTasks(31, d, 60, 90, 45)
	rng := rand.New(rand.NewPCG(4, 4))
	for _, norm := range []Normalization{NormSum, NormMean} {
		beta := 0.1
		if norm == NormMean {
			beta = 1e-3
		}
		c := components(t, beta, norm, samples...)
		s := mustSolver(t, c, Options{Beta: beta, Normalization: norm})
		for _, w := range [][]float64{{1, 0, 0}, {0.2, 0.5, 0.3}, {1, 1, 1}} {
			p, err := NewPreference(s.Tasks(), w)
			if err != nil {
				t.Fatal(err)
			}
			ap, cp := refSystem(t, beta, norm, p.Weights(), samples...)
			var wt mat.Dense
			if err := wt.Solve(cp.T(), ap.T()); err != nil {
				t.Fatal(err)
			}
			ref := mat.DenseCopyOf(wt.T())

			f, err := s.Factor(p)
			if err != nil {
				t.Fatal(err)
			}
			assertClose(t, string(norm)+" Form", f.Form(), ref, 1e-10)
			if full, err := s.Solve(p); err != nil || !mat.EqualApprox(full, f.Form(), 1e-12) {
				t.Errorf("%s %v: Form differs from Solve (%v)", norm, w, err)
			}

			// Batches of 1, 3 (vector routines, row by row) and 7 rows
			// (matrix routines), corrected in float64 and rounded once.
			for _, rows := range []int{1, 3, 7} {
				z := make([]float32, rows*d)
				for i := range z {
					z[i] = float32(rng.NormFloat64())
				}
				got := make([]float32, len(z))
				var sc FactoredScratch
				if err := f.Correct(got, z, &sc); err != nil {
					t.Fatal(err)
				}
				for r := 0; r < rows; r++ {
					for i := 0; i < d; i++ {
						want, scale := 0.0, 0.0
						for j := 0; j < d; j++ {
							want += ref.At(i, j) * float64(z[r*d+j])
							scale += abs(ref.At(i, j) * float64(z[r*d+j]))
						}
						if e := abs(float64(got[r*d+i]) - want); e > 1e-6*scale+1e-30 {
							t.Fatalf("%s %v, %d rows: row %d [%d] = %v, want %v (error %.3g of %.3g)", norm, w, rows, r, i, got[r*d+i], want, e, scale)
						}
					}
				}
			}
		}
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestFactorRefusesLikeSolve: a singular C_p is a *SolveError from Factor as
// from SolveIntoStats, and bad batches are refused.
func TestFactorRefusesLikeSolve(t *testing.T) {
	samples := threeTasks(5, 16, 4, 40, 40) // task0 has N=4 < D=16
	c := components(t, 0, NormSum, samples...)
	s := mustSolver(t, c, Options{Beta: 0, Normalization: NormSum})
	p := mustPref(t, "task0=1", s.Tasks())
	_, err := s.Factor(p)
	var se *SolveError
	if !errors.As(err, &se) {
		t.Fatalf("Factor of a singular C_p = %v, want a *SolveError", err)
	}
	if _, err := s.Factor(Preference{}); err == nil {
		t.Error("Factor of the empty preference succeeded")
	}
	s = mustSolver(t, c, Options{Beta: 1, Normalization: NormSum})
	f, err := s.Factor(p)
	if err != nil {
		t.Fatal(err)
	}
	z := make([]float32, 2*16)
	for _, tc := range []struct {
		dst, z []float32
	}{
		{make([]float32, 31), z[:31]}, // not whole rows
		{make([]float32, 16), z},      // short destination
		{z[1:17], z[:16]},             // overlap
	} {
		if err := f.Correct(tc.dst, tc.z, nil); err == nil {
			t.Errorf("Correct(%d into %d) succeeded", len(tc.z), len(tc.dst))
		}
	}
}
