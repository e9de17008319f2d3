package linalg

import "gonum.org/v1/gonum/blas/blas64"

// Task is one task's statistics as the weighted sums read them:
//
//	A_t = Scale S + β W,  C_t = Scale G + β I,
//
// with S and W D×D and G read in its upper triangle, each in the storage
// of the matrix that holds it (a stride of at least D). Scale is the
// factor of the normalisation (1, or 1/N_t for a mean).
type Task struct {
	S, W blas64.General
	G    blas64.Symmetric
	// A is A_t, D×D with stride D, when precomputed (see ARow), or nil:
	// the sums then read S and W.
	A     []float64
	Scale float64
}

// ARow stores row i of A_t = Scale S + β W in row (D long).
func (t *Task) ARow(row []float64, i int, beta float64) {
	srow, wrow := t.S.Data[i*t.S.Stride:i*t.S.Stride+len(row)], t.W.Data[i*t.W.Stride:i*t.W.Stride+len(row)]
	for j := range row {
		row[j] = t.Scale*srow[j] + beta*wrow[j]
	}
}

// sumRows is the number of rows the weighted sums accumulate at a time: a
// block of A_p (sumRows × D float64) stays in the cache while every task
// adds to it, so that A_p and C_p are written to memory once, not once per
// task (at D = 768, a block of 48 rows is 288 KiB).
const sumRows = 48

// WeightedSums stores A_p = Σ w_k A_k in ap (D×D) and
// C_p = Σ w_k (Scale_k G_k + β I) in the upper triangle of cp (D×D,
// stride D), for the weights w aligned with tasks, a block of rows at a
// time, with one AXPY per matrix, task and block (or per row, for
// matrices with a wider stride). Below the diagonal, cp is left holding
// what is never read. It returns the 1-norm of C_p, summed up from each
// block while it is in the cache, using col (D long) as scratch.
func WeightedSums(ap blas64.General, cp []float64, tasks []Task, w []float64, beta float64, col []float64) float64 {
	d := ap.Rows
	// add adds alpha times rows i0..i1 of src (columns from col on) to dst.
	add := func(alpha float64, src []float64, srcStride int, dst []float64, dstStride, i0, i1, col int) {
		if alpha == 0 {
			return
		}
		if srcStride == d && dstStride == d {
			axpy(alpha, src[i0*d+col:i1*d], dst[i0*d+col:i1*d])
			return
		}
		for i := i0; i < i1; i++ {
			c0 := max(col, 0)
			axpy(alpha, src[i*srcStride+c0:i*srcStride+d], dst[i*dstStride+c0:i*dstStride+d])
		}
	}
	total := 0.0
	for _, wk := range w {
		total += wk
	}
	for i0 := 0; i0 < d; i0 += sumRows {
		i1 := min(i0+sumRows, d)
		for i := i0; i < i1; i++ {
			clear(ap.Data[i*ap.Stride : i*ap.Stride+d])
		}
		clear(cp[i0*d : i1*d])
		for k, wk := range w {
			if wk == 0 {
				continue
			}
			t := &tasks[k]
			if t.A != nil {
				add(wk, t.A, d, ap.Data, ap.Stride, i0, i1, 0)
			} else {
				add(wk*t.Scale, t.S.Data, t.S.Stride, ap.Data, ap.Stride, i0, i1, 0)
				add(wk*beta, t.W.Data, t.W.Stride, ap.Data, ap.Stride, i0, i1, 0)
			}
			// From the block's first diagonal entry on: the upper
			// triangle, and what lies below it in the block's later rows
			// (never read).
			add(wk*t.Scale, t.G.Data, t.G.Stride, cp, d, i0, i1, i0)
		}
		for i := i0; i < i1; i++ {
			cp[i*d+i] += total * beta
		}
		AddColumnSums(col, cp, d, i0, i1)
	}
	return MaxNorm(col)
}

// axpy computes y += alpha·x for equal-length slices.
func axpy(alpha float64, x, y []float64) {
	blas64.Axpy(alpha, blas64.Vector{N: len(x), Inc: 1, Data: x}, blas64.Vector{N: len(y), Inc: 1, Data: y})
}
