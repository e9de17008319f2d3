package linalg_test

import (
	"math"
	"math/rand/v2"
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
		par := mat.DenseCopyOf(a)
		linalg.SolveRows(u.RawTriangular(), par.RawMatrix(), blocked, 4)
		ser := mat.DenseCopyOf(a)
		linalg.SolveRows(u.RawTriangular(), ser.RawMatrix(), blocked, 1)
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

// TestSolveRowsInverted: with at least InvertRows rows, blocked, SolveRows
// multiplies by the inverses of U's diagonal blocks. Against the two
// DTRSMs (the textbook solve) on C = Q diag(λ) Qᵀ of condition numbers
// 10² to 10⁸, its backward error ‖W C − A‖/(‖W‖‖C‖) stays at a few units
// of rounding, and its distance from the DTRSMs' W within κ(C)·ε, the
// bound of either (and differs from the blocks' solves in the last bits:
// the inverses are used); with fewer rows it solves with the blocks, as
// CholSolveRight does, and agrees with it exactly.
func TestSolveRowsInverted(t *testing.T) {
	const d = 2*linalg.TrsmBlock + 37
	rows := linalg.InvertRows + 19
	for _, cond := range []float64{1e2, 1e5, 1e8} {
		rng := rand.New(rand.NewPCG(uint64(cond), 5))
		c, u := spdFactor(t, rng, d, cond)
		a := normalRows(rng, rows, d)
		ref := mat.DenseCopyOf(a)
		linalg.CholSolveRight(u.RawTriangular(), ref.RawMatrix(), false)
		blocks := mat.DenseCopyOf(a)
		linalg.CholSolveRight(u.RawTriangular(), blocks.RawMatrix(), true)
		for _, workers := range []int{1, 2} {
			w := mat.DenseCopyOf(a)
			linalg.SolveRows(u.RawTriangular(), w.RawMatrix(), true, workers)
			backward := backwardError(w, c, a)
			forward := relErr(w, ref)
			t.Logf("κ=%.0e workers=%d: backward error %.2e, from the DTRSMs %.2e", cond, workers, backward, forward)
			if backward > 10*eps {
				t.Errorf("κ=%g, %d workers: backward error %.3g > 10ε", cond, workers, backward)
			}
			if mat.Equal(w, blocks) {
				t.Errorf("κ=%g, %d workers: the blocks solved with, not inverted (the same W to the bit)", cond, workers)
			}
			if forward > cond*d*eps {
				t.Errorf("κ=%g, %d workers: %.3g from the DTRSMs' W, beyond κ·D·ε", cond, workers, forward)
			}
		}
		// Fewer rows than InvertRows: the blocks are solved with.
		few := linalg.InvertRows - 1
		sub := mat.DenseCopyOf(a.Slice(0, few, 0, d))
		linalg.SolveRows(u.RawTriangular(), sub.RawMatrix(), true, 1)
		blk := mat.DenseCopyOf(a.Slice(0, few, 0, d))
		linalg.CholSolveRight(u.RawTriangular(), blk.RawMatrix(), true)
		if !mat.Equal(sub, blk) {
			t.Errorf("κ=%g: %d rows not solved as CholSolveRight solves them", cond, few)
		}
	}
}

// eps is float64's unit roundoff.
const eps = 0x1p-53

// spdFactor returns a random D×D symmetric positive definite C of
// condition number cond (randomSPD) and its Cholesky factor U, C = UᵀU.
func spdFactor(t *testing.T, rng *rand.Rand, d int, cond float64) (*mat.SymDense, *mat.TriDense) {
	t.Helper()
	c := randomSPD(rng, d, cond)
	var chol mat.Cholesky
	if !chol.Factorize(c) {
		t.Fatalf("D=%d, κ=%g: not positive definite", d, cond)
	}
	var u mat.TriDense
	chol.UTo(&u)
	return c, &u
}

// backwardError is ‖W C − A‖₂/(‖W‖₂‖C‖₂): how far a solution W of W C = A
// is from solving it, relative to rounding of the product.
func backwardError(w *mat.Dense, c *mat.SymDense, a *mat.Dense) float64 {
	var res mat.Dense
	res.Mul(w, c)
	res.Sub(&res, a)
	return mat.Norm(&res, 2) / (mat.Norm(w, 2) * mat.Norm(c, 2))
}

// normalRows returns a rows×D matrix of standard normal entries.
func normalRows(rng *rand.Rand, rows, d int) *mat.Dense {
	a := mat.NewDense(rows, d, nil)
	for i := range rows {
		for j := range d {
			a.Set(i, j, rng.NormFloat64())
		}
	}
	return a
}

// sameBits reports whether a and b hold the same float64s bit for bit,
// any NaN matching any NaN.
func sameBits(a, b *mat.Dense) bool {
	ra, rb := a.RawMatrix(), b.RawMatrix()
	for i := range ra.Rows {
		for j := range ra.Cols {
			x, y := ra.Data[i*ra.Stride+j], rb.Data[i*rb.Stride+j]
			if math.Float64bits(x) != math.Float64bits(y) && !(math.IsNaN(x) && math.IsNaN(y)) {
				return false
			}
		}
	}
	return true
}

// TestSolveRowsBlockEdges: for D around multiples of the block width (one
// column past a block, a partial last block, exact multiples) and rows
// just below, at and above InvertRows and D itself (W_p's shape), on one
// to three goroutines, SolveRows' W satisfies W C = A to a backward error
// of a few units of rounding (‖W C − A‖/(‖W‖‖C‖), C = UᵀU formed here), and
// it inverts the diagonal blocks exactly when it has InvertRows rows or
// more, as W_p's D rows always are: below, it solves with them as
// CholSolveRight does, to the bit.
func TestSolveRowsBlockEdges(t *testing.T) {
	for _, d := range []int{linalg.TrsmBlock + 1, 2*linalg.TrsmBlock - 1, 2 * linalg.TrsmBlock, 2*linalg.TrsmBlock + 1} {
		rng := rand.New(rand.NewPCG(uint64(d), 7))
		c, u := spdFactor(t, rng, d, 1e4)
		for _, rows := range []int{linalg.InvertRows - 1, linalg.InvertRows, linalg.InvertRows + 1, d} {
			a := normalRows(rng, rows, d)
			blocks := mat.DenseCopyOf(a)
			linalg.CholSolveRight(u.RawTriangular(), blocks.RawMatrix(), true)
			for _, workers := range []int{1, 3} {
				w := mat.DenseCopyOf(a)
				linalg.SolveRows(u.RawTriangular(), w.RawMatrix(), true, workers)
				if be := backwardError(w, c, a); be > 10*eps {
					t.Errorf("D=%d, %d rows, %d workers: backward error %.3g > 10ε", d, rows, workers, be)
				}
				if workers > 1 {
					continue // other row blocks, other GEMM rounding
				}
				// W_p's own solves (D rows, D past one block) always invert.
				inverted := !mat.Equal(w, blocks)
				if want := rows >= linalg.InvertRows || rows == d; inverted != want {
					t.Errorf("D=%d, %d rows: diagonal blocks inverted %v, want %v", d, rows, inverted, want)
				}
			}
		}
	}
}

// TestSolveRowsSingularDiagonal: a U whose diagonal block cannot be
// inverted (an exact zero on its diagonal: TRTRI fails) is solved with, as
// CholSolveRight solves it, to the bit (non-finite entries alike), never
// multiplied by a half-made inverse; a NaN on the diagonal makes every
// entry of W NaN, inverted or not.
func TestSolveRowsSingularDiagonal(t *testing.T) {
	const d = 2*linalg.TrsmBlock + 37
	rng := rand.New(rand.NewPCG(9, 9))
	_, tri := spdFactor(t, rng, d, 1e3)
	a := normalRows(rng, linalg.InvertRows+19, d)
	for _, k := range []int{3, linalg.TrsmBlock + 5, d - 1} {
		for _, bad := range []float64{0, math.NaN()} {
			raw := tri.RawTriangular()
			raw.Data = append([]float64(nil), raw.Data...)
			u := mat.NewTriDense(d, mat.Upper, nil)
			u.SetRawTriangular(raw)
			u.SetTri(k, k, bad)
			w := mat.DenseCopyOf(a)
			linalg.SolveRows(u.RawTriangular(), w.RawMatrix(), true, 1)
			if bad == 0 {
				want := mat.DenseCopyOf(a)
				linalg.CholSolveRight(u.RawTriangular(), want.RawMatrix(), true)
				if !sameBits(w, want) {
					t.Errorf("U[%d,%d] = 0: W not the blocks' solves' (a singular block's inverse used)", k, k)
				}
				continue
			}
			for _, rows := range []int{linalg.InvertRows + 19, linalg.InvertRows - 1} {
				w := mat.DenseCopyOf(a.Slice(0, rows, 0, d))
				linalg.SolveRows(u.RawTriangular(), w.RawMatrix(), true, 1)
				finite := 0
				for _, v := range w.RawMatrix().Data {
					if !math.IsNaN(v) {
						finite++
					}
				}
				if finite > 0 {
					t.Errorf("U[%d,%d] = NaN, %d rows: %d entries of W not NaN", k, k, rows, finite)
				}
			}
		}
	}
}

// TestSolveRowsSerialAllocs: SolveRows allocates nothing of its own (no
// goroutine, no inverse: no more than CholSolveRight, whose BLAS may) when
// it runs on the calling goroutine without inverting: fewer than two
// blocks of MinRowsPerWorker rows whatever the workers asked, one worker
// and fewer than InvertRows rows, a U of one block, or unblocked solves
// (the inverses are for the blocked ones only).
func TestSolveRowsSerialAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for _, tc := range []struct {
		d, rows, workers int
		blocked          bool
	}{
		{2*linalg.TrsmBlock + 37, 2*linalg.MinRowsPerWorker - 1, 8, false},
		{2*linalg.TrsmBlock + 37, linalg.InvertRows - 1, 1, true},
		{2*linalg.TrsmBlock + 37, linalg.InvertRows + 19, 1, false},
		{linalg.TrsmBlock, linalg.InvertRows + 19, 1, true},
	} {
		_, u := spdFactor(t, rng, tc.d, 10)
		a := normalRows(rng, tc.rows, tc.d)
		w := mat.NewDense(tc.rows, tc.d, nil)
		allocs := func(solve func()) float64 {
			return testing.AllocsPerRun(3, func() { w.Copy(a); solve() })
		}
		want := allocs(func() { linalg.CholSolveRight(u.RawTriangular(), w.RawMatrix(), tc.blocked) })
		got := allocs(func() { linalg.SolveRows(u.RawTriangular(), w.RawMatrix(), tc.blocked, tc.workers) })
		if got != want {
			t.Errorf("D=%d, %d rows, %d workers, blocked %v: %v allocations, CholSolveRight's %v", tc.d, tc.rows, tc.workers, tc.blocked, got, want)
		}
	}
}
