package linalg

import (
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
)

// trsmBlock is the width of the column blocks of CholSolveRight: the
// diagonal blocks' small triangular solves take about trsmBlock/D of the
// flops, the rest are matrix products.
const trsmBlock = 128

// invertRows is the fewest rows for which SolveRows inverts U's diagonal
// blocks once and multiplies by the inverses (TRMM) instead of solving
// with each block (TRSM): the inversions cost about as much as the
// products of 100 rows save (react's BenchmarkSolveSteps, OpenBLAS, one
// core), and the W_p of a solve has D rows.
const invertRows = trsmBlock

// CholSolveRight overwrites b with W such that W UᵀU = b, U upper
// triangular (u's upper triangle, D×D): the solves Y U = b and W Uᵀ = Y.
// When blocked, they are done a block of trsmBlock columns at a time so
// that nearly all of their flops are GEMMs, which the BLAS runs at close to
// its peak while its TRSM, on the shapes of a solve for W_p, runs at about
// half of it (react's BenchmarkSolveSteps); otherwise they are two DTRSMs.
// The results agree up to rounding: the same operations, summed in another
// order. The caller's linear-algebra backend decides: with gonum's kernels
// on one core the two DTRSMs are faster.
func CholSolveRight(u blas64.Triangular, b blas64.General, blocked bool) {
	solveRight(u, b, blocked, nil)
}

// diagInverses are the inverses of the diagonal blocks of trsmBlock
// columns of an upper triangular U, each upper triangular in a stride of
// its own order, in the order of the blocks.
type diagInverses []blas64.Triangular

// invertDiagonalBlocks returns the inverses of u's diagonal blocks, or nil
// when one is singular (never for the factor of a positive definite
// matrix; the caller then solves with the blocks instead).
func invertDiagonalBlocks(u blas64.Triangular) diagInverses {
	d := u.N
	buf := make([]float64, 0, trsmBlock*d)
	var inv diagInverses
	for j0 := 0; j0 < d; j0 += trsmBlock {
		n := min(trsmBlock, d-j0)
		m := buf[len(buf) : len(buf)+n*n]
		buf = buf[:len(buf)+n*n]
		for i := range n {
			clear(m[i*n : i*n+i])
			copy(m[i*n+i:i*n+n], u.Data[(j0+i)*u.Stride+j0+i:(j0+i)*u.Stride+j0+n])
		}
		t := blas64.Triangular{N: n, Stride: n, Data: m, Uplo: blas.Upper, Diag: blas.NonUnit}
		if !lapack64.Trtri(t) {
			return nil
		}
		inv = append(inv, t)
	}
	return inv
}

// solveRight is CholSolveRight, multiplying by the inverted diagonal
// blocks in inv instead of solving with them when inv is not nil (and
// blocked): W_J = (b_J − …) U_JJ⁻¹ as a TRMM, which the BLAS runs closer to
// its GEMM's speed than a TRSM; the same result up to rounding, with an
// error bound larger by at most the condition number of a diagonal block
// of U, which never exceeds U's (√κ(C)).
func solveRight(u blas64.Triangular, b blas64.General, blocked bool, inv diagInverses) {
	d, rows := u.N, b.Rows
	if d <= trsmBlock || !blocked {
		blas64.Trsm(blas.Right, blas.NoTrans, 1, u, b)
		blas64.Trsm(blas.Right, blas.Trans, 1, u, b)
		return
	}
	sub := func(m blas64.General, i0, i1, j0, j1 int) blas64.General {
		return blas64.General{Rows: i1 - i0, Cols: j1 - j0, Stride: m.Stride, Data: m.Data[i0*m.Stride+j0:]}
	}
	ug := blas64.General{Rows: d, Cols: d, Stride: u.Stride, Data: u.Data}
	// diag sets b_J to b_J U_JJ⁻¹ (tr NoTrans) or b_J U_JJ⁻ᵀ (Trans).
	diag := func(j0, j1 int, bj blas64.General, tr blas.Transpose) {
		if inv != nil {
			blas64.Trmm(blas.Right, tr, 1, inv[j0/trsmBlock], bj)
			return
		}
		t := blas64.Triangular{N: j1 - j0, Stride: u.Stride, Data: u.Data[j0*u.Stride+j0:], Uplo: blas.Upper, Diag: blas.NonUnit}
		blas64.Trsm(blas.Right, tr, 1, t, bj)
	}
	// Y U = b, left to right: Y_J = (b_J − Y_{<J} U_{<J,J}) U_JJ⁻¹.
	for j0 := 0; j0 < d; j0 += trsmBlock {
		j1 := min(j0+trsmBlock, d)
		bj := sub(b, 0, rows, j0, j1)
		if j0 > 0 {
			blas64.Gemm(blas.NoTrans, blas.NoTrans, -1, sub(b, 0, rows, 0, j0), sub(ug, 0, j0, j0, j1), 1, bj)
		}
		diag(j0, j1, bj, blas.NoTrans)
	}
	// W Uᵀ = Y, right to left: W_J = (Y_J − W_{>J} U_{J,>J}ᵀ) U_JJ⁻ᵀ.
	last := (d - 1) / trsmBlock * trsmBlock
	for j0 := last; j0 >= 0; j0 -= trsmBlock {
		j1 := min(j0+trsmBlock, d)
		bj := sub(b, 0, rows, j0, j1)
		if j1 < d {
			blas64.Gemm(blas.NoTrans, blas.Trans, -1, sub(b, 0, rows, j1, d), sub(ug, j0, j1, j1, d), 1, bj)
		}
		diag(j0, j1, bj, blas.Trans)
	}
}

// minRowsPerWorker is the smallest block of rows worth a goroutine in
// SolveRows: below it the goroutine overhead outweighs the O(rows·D²) work.
const minRowsPerWorker = 64

// SolveRows is CholSolveRight on blocks of b's rows on up to workers
// goroutines at once (both triangular solves act on each row of b on its
// own); when blocked and b has at least invertRows rows, with U's
// diagonal blocks inverted once for all of them.
func SolveRows(u blas64.Triangular, b blas64.General, blocked bool, workers int) {
	var inv diagInverses
	if blocked && u.N > trsmBlock && b.Rows >= invertRows {
		inv = invertDiagonalBlocks(u)
	}
	workers = min(workers, b.Rows/minRowsPerWorker)
	if workers <= 1 {
		solveRight(u, b, blocked, inv)
		return
	}
	solveParallel(u, b, blocked, inv, workers)
}

// solveParallel is SolveRows on workers goroutines (apart, so that the
// serial path allocates nothing for them).
func solveParallel(u blas64.Triangular, b blas64.General, blocked bool, inv diagInverses, workers int) {
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		lo, hi := w*b.Rows/workers, (w+1)*b.Rows/workers
		block := blas64.General{Rows: hi - lo, Cols: b.Cols, Stride: b.Stride, Data: b.Data[lo*b.Stride:]}
		wg.Go(func() { solveRight(u, block, blocked, inv) })
	}
	wg.Wait()
}
