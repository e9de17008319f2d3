package linalg

import (
	"runtime"
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// trsmBlock is the width of the column blocks of CholSolveRight: the
// diagonal blocks' small triangular solves take about trsmBlock/D of the
// flops, the rest are matrix products.
const trsmBlock = 128

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
	tri := func(j0, j1 int) blas64.Triangular {
		return blas64.Triangular{N: j1 - j0, Stride: u.Stride, Data: u.Data[j0*u.Stride+j0:], Uplo: blas.Upper, Diag: blas.NonUnit}
	}
	// Y U = b, left to right: Y_J = (b_J − Y_{<J} U_{<J,J}) U_JJ⁻¹.
	for j0 := 0; j0 < d; j0 += trsmBlock {
		j1 := min(j0+trsmBlock, d)
		bj := sub(b, 0, rows, j0, j1)
		if j0 > 0 {
			blas64.Gemm(blas.NoTrans, blas.NoTrans, -1, sub(b, 0, rows, 0, j0), sub(ug, 0, j0, j0, j1), 1, bj)
		}
		blas64.Trsm(blas.Right, blas.NoTrans, 1, tri(j0, j1), bj)
	}
	// W Uᵀ = Y, right to left: W_J = (Y_J − W_{>J} U_{J,>J}ᵀ) U_JJ⁻ᵀ.
	last := (d - 1) / trsmBlock * trsmBlock
	for j0 := last; j0 >= 0; j0 -= trsmBlock {
		j1 := min(j0+trsmBlock, d)
		bj := sub(b, 0, rows, j0, j1)
		if j1 < d {
			blas64.Gemm(blas.NoTrans, blas.Trans, -1, sub(b, 0, rows, j1, d), sub(ug, j0, j1, j1, d), 1, bj)
		}
		blas64.Trsm(blas.Right, blas.Trans, 1, tri(j0, j1), bj)
	}
}

// minRowsPerWorker is the smallest block of rows worth a goroutine in
// SolveRows: below it the goroutine overhead outweighs the O(rows·D²) work.
const minRowsPerWorker = 64

// SolveRows is CholSolveRight on blocks of b's rows in parallel, when
// GOMAXPROCS allows: both triangular solves act on each row of b on its
// own.
func SolveRows(u blas64.Triangular, b blas64.General, blocked bool) {
	workers := min(runtime.GOMAXPROCS(0), b.Rows/minRowsPerWorker)
	if workers <= 1 {
		CholSolveRight(u, b, blocked)
		return
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		lo, hi := w*b.Rows/workers, (w+1)*b.Rows/workers
		block := blas64.General{Rows: hi - lo, Cols: b.Cols, Stride: b.Stride, Data: b.Data[lo*b.Stride:]}
		wg.Add(1)
		go func() {
			defer wg.Done()
			CholSolveRight(u, block, blocked)
		}()
	}
	wg.Wait()
}
