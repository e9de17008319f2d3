package linalg_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/react/internal/linalg"
)

// TestEstimateOneNorm checks the estimator against the exact 1-norms of
// symmetric positive definite matrices and of their inverses: never above,
// and within a factor of 3 (Higham's estimator is usually exact on such
// matrices), as the device solver's condition estimate relies on.
func TestEstimateOneNorm(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name string
		n    int
		cond float64 // spread of the eigenvalues
	}{
		{"1x1", 1, 1},
		{"well conditioned", 40, 10},
		{"ill conditioned", 60, 1e10},
		{"sample Gram", 96, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := randomSPD(rng, tc.n, tc.cond)
			var inv mat.Dense
			if err := inv.Inverse(m); err != nil {
				t.Fatal(err)
			}
			for _, op := range []struct {
				name string
				m    mat.Matrix
			}{{"M", m}, {"M⁻¹", &inv}} {
				apply := func(y, x []float64) error {
					mat.NewVecDense(tc.n, y).MulVec(op.m, mat.NewVecDense(tc.n, x))
					return nil
				}
				x, y, s := make([]float64, tc.n), make([]float64, tc.n), make([]float64, tc.n)
				est, err := linalg.EstimateOneNorm(tc.n, apply, x, y, s)
				if err != nil {
					t.Fatal(err)
				}
				exact := mat.Norm(op.m, 1)
				if est > exact*(1+1e-9) || est < exact/3 {
					t.Errorf("%s: estimate %g, exact 1-norm %g", op.name, est, exact)
				}
			}
		})
	}
}

func TestEstimateOneNormNaN(t *testing.T) {
	n := 4
	apply := func(y, x []float64) error {
		for i := range y {
			y[i] = math.NaN()
		}
		return nil
	}
	est, err := linalg.EstimateOneNorm(n, apply, make([]float64, n), make([]float64, n), make([]float64, n))
	if err != nil || !math.IsNaN(est) {
		t.Errorf("estimate of a NaN operator = %g, %v; want NaN", est, err)
	}
}

// randomSPD returns a random symmetric positive definite n×n matrix: with
// eigenvalues spread log-uniformly over [1, cond] in a random basis, or,
// for cond 0, the Gram matrix of 2n random samples plus a small ridge.
func randomSPD(rng *rand.Rand, n int, cond float64) *mat.SymDense {
	q := mat.NewDense(n, n, nil)
	for i := range n {
		for j := range n {
			q.Set(i, j, rng.NormFloat64())
		}
	}
	out := mat.NewSymDense(n, nil)
	if cond == 0 {
		z := mat.NewDense(2*n, n, nil)
		for i := range 2 * n {
			for j := range n {
				z.Set(i, j, rng.NormFloat64()+0.3)
			}
		}
		out.SymOuterK(1, z.T())
		for i := range n {
			out.SetSym(i, i, out.At(i, i)+1e-3)
		}
		return out
	}
	var qr mat.QR
	qr.Factorize(q)
	var o mat.Dense
	qr.QTo(&o)
	d := mat.NewDiagDense(n, nil)
	for i := range n {
		d.SetDiag(i, math.Pow(cond, float64(i)/float64(max(n-1, 1))))
	}
	var od, full mat.Dense
	od.Mul(&o, d)
	full.Mul(&od, o.T())
	for i := range n {
		for j := i; j < n; j++ {
			out.SetSym(i, j, (full.At(i, j)+full.At(j, i))/2)
		}
	}
	return out
}

// TestOneNormUpper checks the 1-norm of a symmetric matrix from its upper
// triangle against gonum's (LAPACK's Dlansy, on the full matrix).
func TestOneNormUpper(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for _, d := range []int{1, 2, 7, 40} {
		sym := mat.NewSymDense(d, nil)
		up := make([]float64, d*d)
		for i := 0; i < d; i++ {
			for j := i; j < d; j++ {
				v := rng.NormFloat64()
				sym.SetSym(i, j, v)
				up[i*d+j] = v
			}
		}
		want := mat.Norm(sym, 1)
		if got := linalg.OneNormUpper(up, d, make([]float64, d)); math.Abs(got-want) > 1e-12*want {
			t.Errorf("D=%d: OneNormUpper = %v, want %v", d, got, want)
		}
	}
}
