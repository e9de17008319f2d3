package mattest

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// OrthRef returns the orthogonal polar factor of a full-rank square s as
// s (sᵀs)^(-1/2), from a symmetric eigendecomposition: a formula
// independent of the SVD that react.Procrustes uses.
func OrthRef(t testing.TB, s mat.Matrix) *mat.Dense {
	t.Helper()
	n, _ := s.Dims()
	var sts mat.SymDense
	sts.SymOuterK(1, mat.DenseCopyOf(s).T())
	var eig mat.EigenSym
	if !eig.Factorize(&sts, true) {
		t.Fatal("OrthRef: eigendecomposition failed")
	}
	vals := eig.Values(nil)
	var v mat.Dense
	eig.VectorsTo(&v)
	inv := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			x := 0.0
			for k := 0; k < n; k++ {
				x += v.At(i, k) * v.At(j, k) / math.Sqrt(vals[k])
			}
			inv.Set(i, j, x)
		}
	}
	out := mat.NewDense(n, n, nil)
	out.Mul(s, inv)
	return out
}

// RefSystem returns A_p = Σ p_t (S'_t + β W_orth_t) and
// C_p = Σ p_t (G'_t + β I) from the raw samples, with W_orth from OrthRef:
// S'_t and G'_t are the sums RawS and RawG, or, with mean (react's
// NormMean), the sums divided by N_t.
func RefSystem(t testing.TB, beta float64, mean bool, p []float64, samples ...Sample) (ap, cp *mat.Dense) {
	t.Helper()
	d := samples[0].D
	ap, cp = mat.NewDense(d, d, nil), mat.NewDense(d, d, nil)
	for k, s := range samples {
		if p[k] == 0 {
			continue
		}
		scale := 1.0
		if mean {
			scale = 1 / float64(s.N)
		}
		S, G, W := s.RawS(), s.RawG(), OrthRef(t, s.RawS())
		for i := 0; i < d; i++ {
			for j := 0; j < d; j++ {
				a := scale*S.At(i, j) + beta*W.At(i, j)
				c := scale * G.At(i, j)
				if i == j {
					c += beta
				}
				ap.Set(i, j, ap.At(i, j)+p[k]*a)
				cp.Set(i, j, cp.At(i, j)+p[k]*c)
			}
		}
	}
	return ap, cp
}
