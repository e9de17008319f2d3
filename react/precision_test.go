package react

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestPrecision measures, on the backend in use, how far each hot path is
// from a float64 reference computed here row by row, and bounds it:
//
//   - the batch correction in float32 (one SGEMM with OpenBLAS, one GEMV
//     per row in pure Go), against the float64 product of the same float32
//     inputs: the relative error of a row is a few float32 roundings;
//   - the factored path (float64 inside, one rounding at the end);
//   - accumulation of float32 features into float64 S and G (GEMM, SYRK),
//     against compensated (Kahan) float64 sums.
//
// The measured errors are logged (go test -v -run Precision) and quoted in
// docs/linear-algebra.md.
func TestPrecision(t *testing.T) {
	const d, rows = 256, 64
	rng := rand.New(rand.NewPCG(21, 7))
	w := make([]float32, d*d)
	for i := range w {
		w[i] = float32(rng.NormFloat64() / math.Sqrt(d))
	}
	z := make([]float32, rows*d)
	for i := range z {
		z[i] = float32(rng.NormFloat64())
	}
	ref := make([]float64, rows*d)
	for r := 0; r < rows; r++ {
		for i := 0; i < d; i++ {
			s := 0.0
			for j := 0; j < d; j++ {
				s += float64(w[i*d+j]) * float64(z[r*d+j])
			}
			ref[r*d+i] = s
		}
	}
	rowErr := func(got []float32) float64 {
		worst := 0.0
		for r := 0; r < rows; r++ {
			num, den := 0.0, 0.0
			for i := 0; i < d; i++ {
				e := float64(got[r*d+i]) - ref[r*d+i]
				num += e * e
				den += ref[r*d+i] * ref[r*d+i]
			}
			worst = max(worst, math.Sqrt(num/den))
		}
		return worst
	}
	got := make([]float32, len(z))
	if err := Correct(got, z, w, d); err != nil {
		t.Fatal(err)
	}
	corr := rowErr(got)
	t.Logf("%s: correction (float32, D=%d, B=%d): worst relative row error %.2g", CurrentBackend(), d, rows, corr)
	if corr > 1e-6 {
		t.Errorf("correction: relative row error %.2g, want ≤ 1e-6", corr)
	}

	// Accumulation against compensated sums.
	const n = 2048
	mtl, ind := make([]float32, n*d), make([]float32, n*d)
	for i := range mtl {
		mtl[i], ind[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64()+0.5)
	}
	acc := NewAccumulator(d)
	for b := 0; b < n; b += 256 {
		if err := acc.AddFloat32(mtl[b*d:(b+256)*d], ind[b*d:(b+256)*d]); err != nil {
			t.Fatal(err)
		}
	}
	worstS, worstG := 0.0, 0.0
	for i := 0; i < d; i += 17 { // a sample of entries: each is a sum over n rows
		for j := 0; j < d; j += 13 {
			var sS, cS, sG, cG float64
			for r := 0; r < n; r++ {
				sS, cS = kahan(sS, cS, float64(ind[r*d+i])*float64(mtl[r*d+j]))
				sG, cG = kahan(sG, cG, float64(mtl[r*d+i])*float64(mtl[r*d+j]))
			}
			scale := float64(n) // the sum of |terms| is about n here
			worstS = max(worstS, math.Abs(acc.s[i*d+j]-sS)/scale)
			if j >= i {
				worstG = max(worstG, math.Abs(acc.g[i*d+j]-sG)/scale)
			}
		}
	}
	t.Logf("%s: accumulation (float64, D=%d, N=%d): worst error of S %.2g, of G %.2g (relative to the sum of |terms|)", CurrentBackend(), d, n, worstS, worstG)
	if worstS > 1e-13 || worstG > 1e-13 {
		t.Errorf("accumulation errors %.2g, %.2g: want ≤ 1e-13", worstS, worstG)
	}
}

// kahan adds x to the compensated sum (s, c).
func kahan(s, c, x float64) (float64, float64) {
	y := x - c
	t := s + y
	return t, (t - s) - y
}
