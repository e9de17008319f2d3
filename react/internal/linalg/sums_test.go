package linalg_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/mergectl/react-triton/react/internal/linalg"
)

// sumsTask is one task's matrices as plain D×D row-major slices, the
// reference's view of a linalg.Task.
type sumsTask struct {
	s, w, g []float64 // g symmetric, both triangles set
	scale   float64
}

// randomSumsTasks returns n tasks of order d with random S, W and a
// random symmetric G.
func randomSumsTasks(rng *rand.Rand, n, d int) []sumsTask {
	ts := make([]sumsTask, n)
	for k := range ts {
		t := sumsTask{s: make([]float64, d*d), w: make([]float64, d*d), g: make([]float64, d*d), scale: 1 / float64(50+17*k)}
		for i := range d * d {
			t.s[i], t.w[i] = rng.NormFloat64(), rng.NormFloat64()
		}
		for i := range d {
			for j := i; j < d; j++ {
				v := rng.NormFloat64()
				t.g[i*d+j], t.g[j*d+i] = v, v
			}
		}
		ts[k] = t
	}
	return ts
}

// strided copies the d×d row-major m into storage of the given stride,
// at an offset, filling the rest with fill; the view starts at off.
func strided(m []float64, d, stride, off int, fill float64) []float64 {
	out := make([]float64, off+d*stride)
	for i := range out {
		out[i] = fill
	}
	for i := range d {
		copy(out[off+i*stride:off+i*stride+d], m[i*d:i*d+d])
	}
	return out[off:]
}

// refSums computes A_p = Σ w_k (scale_k S_k + β W_k), C_p = Σ w_k
// (scale_k G_k + β I) entry by entry, and ‖C_p‖₁ from the full symmetric
// C_p by columns.
func refSums(ts []sumsTask, w []float64, beta float64, d int) (ap, cp []float64, norm float64) {
	ap, cp = make([]float64, d*d), make([]float64, d*d)
	for i := range d {
		for j := range d {
			var a, c float64
			for k, t := range ts {
				a += w[k] * (t.scale*t.s[i*d+j] + beta*t.w[i*d+j])
				c += w[k] * t.scale * t.g[i*d+j]
				if i == j {
					c += w[k] * beta
				}
			}
			ap[i*d+j], cp[i*d+j] = a, c
		}
	}
	for j := range d {
		sum := 0.0
		for i := range d {
			sum += math.Abs(cp[i*d+j])
		}
		norm = math.Max(norm, sum)
	}
	return ap, cp, norm
}

// TestWeightedSums checks A_p, the upper triangle of C_p and ‖C_p‖₁
// against entry-by-entry sums: with A_t precomputed or summed from S and
// W, matrices stored with a wider stride (the per-row path), orders on
// either side of the row blocks, zero weights, and garbage below G's
// diagonal and in the outputs beforehand.
func TestWeightedSums(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name       string
		d          int
		w          []float64
		precompute bool
		stride     int // extra stride of S, W, G and A_p
	}{
		{"1x1", 1, []float64{0.5, 2}, false, 0},
		{"small one-shot", 7, []float64{0.3, 0, 1.7}, false, 0},
		{"small precomputed", 7, []float64{0.3, 0, 1.7}, true, 0},
		{"blocks one-shot", 100, []float64{1, 0.25, 0, 3}, false, 0},
		{"blocks precomputed", 100, []float64{1, 0.25, 0, 3}, true, 0},
		{"one block exactly", 48, []float64{2, 1}, true, 0},
		{"wide strides one-shot", 53, []float64{0.1, 0.9, 0.4}, false, 5},
		{"wide strides precomputed", 53, []float64{0.1, 0.9, 0.4}, true, 3},
		{"single task", 60, []float64{0, 1, 0}, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const beta = 0.37
			d := tc.d
			rng := rand.New(rand.NewPCG(uint64(d), uint64(len(tc.w))))
			ts := randomSumsTasks(rng, len(tc.w), d)
			tasks := make([]linalg.Task, len(ts))
			stride := d + tc.stride
			for k, rt := range ts {
				g := make([]float64, d*d)
				copy(g, rt.g)
				for i := range d {
					for j := range i {
						g[i*d+j] = nan // never read into C_p's upper triangle
					}
				}
				tasks[k] = linalg.Task{
					S:     blas64.General{Rows: d, Cols: d, Stride: stride, Data: strided(rt.s, d, stride, 2, nan)},
					W:     blas64.General{Rows: d, Cols: d, Stride: stride, Data: strided(rt.w, d, stride, 1, nan)},
					G:     blas64.Symmetric{N: d, Uplo: blas.Upper, Stride: stride, Data: strided(g, d, stride, 3, nan)},
					Scale: rt.scale,
				}
				if tc.precompute {
					// A_t from the reference's terms, so that the sums
					// must read A and not S and W.
					a := make([]float64, d*d)
					for i := range a {
						a[i] = rt.scale*rt.s[i] + beta*rt.w[i]
					}
					tasks[k].A = a
					tasks[k].S.Data, tasks[k].W.Data = nil, nil
				}
			}
			ap := blas64.General{Rows: d, Cols: d, Stride: stride, Data: make([]float64, d*stride)}
			for i := range ap.Data {
				ap.Data[i] = 99
			}
			cp, col := make([]float64, d*d), make([]float64, d)
			for i := range cp {
				cp[i] = 99
			}
			for i := range col {
				col[i] = 99
			}

			norm := linalg.WeightedSums(ap, cp, tasks, tc.w, beta, col)

			wantA, wantC, wantNorm := refSums(ts, tc.w, beta, d)
			const tol = 1e-13
			for i := range d {
				for j := range d {
					if got, want := ap.Data[i*stride+j], wantA[i*d+j]; math.Abs(got-want) > tol*(1+math.Abs(want)) {
						t.Fatalf("A_p[%d,%d] = %g, want %g", i, j, got, want)
					}
					if j < i {
						continue
					}
					if got, want := cp[i*d+j], wantC[i*d+j]; math.Abs(got-want) > tol*(1+math.Abs(want)) {
						t.Fatalf("C_p[%d,%d] = %g, want %g", i, j, got, want)
					}
				}
				for j := d; j < stride; j++ {
					if ap.Data[i*stride+j] != 99 {
						t.Fatalf("A_p's padding at row %d, column %d written: %g", i, j, ap.Data[i*stride+j])
					}
				}
			}
			if math.Abs(norm-wantNorm) > tol*wantNorm {
				t.Errorf("‖C_p‖₁ = %g, want %g", norm, wantNorm)
			}
		})
	}
}

// TestTaskARow checks each row of A_t = Scale S + β W against the
// definition, with S and W in storage of a wider stride.
func TestTaskARow(t *testing.T) {
	const d, stride, beta = 9, 12, 0.25
	rng := rand.New(rand.NewPCG(5, 6))
	rt := randomSumsTasks(rng, 1, d)[0]
	task := linalg.Task{
		S:     blas64.General{Rows: d, Cols: d, Stride: stride, Data: strided(rt.s, d, stride, 0, math.NaN())},
		W:     blas64.General{Rows: d, Cols: d, Stride: stride, Data: strided(rt.w, d, stride, 0, math.NaN())},
		Scale: rt.scale,
	}
	row := make([]float64, d)
	for i := range d {
		task.ARow(row, i, beta)
		for j, got := range row {
			a, b := rt.scale*rt.s[i*d+j], beta*rt.w[i*d+j]
			if want := a + b; math.Abs(got-want) > 1e-15*(math.Abs(a)+math.Abs(b)) {
				t.Errorf("A_t[%d,%d] = %g, want %g", i, j, got, want)
			}
		}
	}
}
