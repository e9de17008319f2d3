package react

import (
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestCholSolveRight: blocked (across several blocks and a partial last
// one) or not, on whichever backend runs the tests, the solution W of
// W UᵀU = A satisfies W C = A for C = UᵀU computed by gonum, and the two
// agree to rounding.
func TestCholSolveRight(t *testing.T) {
	for _, d := range []int{trsmBlock, 2*trsmBlock + 37} {
		rng := rand.New(rand.NewPCG(uint64(d), 3))
		c := mat.NewSymDense(d, nil)
		for i := range d {
			for j := i; j < d; j++ {
				c.SetSym(i, j, rng.Float64()-0.5)
			}
			c.SetSym(i, i, float64(d))
		}
		var chol mat.Cholesky
		if !chol.Factorize(c) {
			t.Fatal("not positive definite")
		}
		var u mat.TriDense
		chol.UTo(&u)
		a := mat.NewDense(40, d, nil)
		for i := range 40 {
			for j := range d {
				a.Set(i, j, rng.NormFloat64())
			}
		}
		var ws [2]*mat.Dense
		for k, blocked := range []bool{false, true} {
			w := mat.DenseCopyOf(a)
			cholSolveRightBlocked(u.RawTriangular(), w.RawMatrix(), blocked)
			var wc mat.Dense
			wc.Mul(w, c)
			assertClose(t, "W C vs A", &wc, a, 1e-13)
			ws[k] = w
		}
		if e := relErr(ws[0], ws[1]); e > 1e-14 {
			t.Errorf("D=%d: blocked and unblocked differ by %.3g", d, e)
		}
	}
}
