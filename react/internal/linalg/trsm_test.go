package linalg_test

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/react/internal/linalg"
)

// TestCholSolveRight: blocked (across several blocks and a partial last
// one) or not, on whichever backend runs the tests, the solution W of
// W UᵀU = A satisfies W C = A for C = UᵀU computed by gonum, and the two
// agree to rounding.
func TestCholSolveRight(t *testing.T) {
	for _, d := range []int{linalg.TrsmBlock, 2*linalg.TrsmBlock + 37} {
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
			linalg.CholSolveRight(u.RawTriangular(), w.RawMatrix(), blocked)
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

// TestSolveRowsParallel checks that the row-parallel triangular solves give
// the serial result, and that the result solves W C = A, blocked (as with
// OpenBLAS) or not (as with gonum's kernels).
func TestSolveRowsParallel(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	const d = 4*linalg.MinRowsPerWorker + 3
	rng := rand.New(rand.NewPCG(12, 1))
	c := mat.NewSymDense(d, nil)
	a := mat.NewDense(d, d, nil)
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			c.SetSym(i, j, rng.Float64()-0.5)
		}
		c.SetSym(i, i, float64(d))
		for j := 0; j < d; j++ {
			a.Set(i, j, rng.NormFloat64())
		}
	}
	var chol mat.Cholesky
	if !chol.Factorize(c) {
		t.Fatal("test matrix is not positive definite")
	}
	var u mat.TriDense
	chol.UTo(&u)
	for _, blocked := range []bool{false, true} {
		runtime.GOMAXPROCS(4)
		par := mat.DenseCopyOf(a)
		linalg.SolveRows(u.RawTriangular(), par.RawMatrix(), blocked)
		runtime.GOMAXPROCS(1)
		ser := mat.DenseCopyOf(a)
		linalg.SolveRows(u.RawTriangular(), ser.RawMatrix(), blocked)
		// The solves' GEMMs (CholSolveRight) block their work by the number
		// of rows, on either backend, so rounding may differ in the last
		// bits.
		if e := relErr(par, ser); e > 1e-14 {
			t.Errorf("blocked %v: parallel and serial solves differ by %.3g", blocked, e)
		}
		var wc mat.Dense
		wc.Mul(par, c)
		assertClose(t, "W C vs A", &wc, a, 1e-13)
	}
}
