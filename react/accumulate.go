package react

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// Accumulator accumulates the calibration statistics of one task from
// batches of paired features, without keeping the samples: the
// cross-covariance S = Σ z_ind z_mtlᵀ, the Gram matrix G = Σ z_mtl z_mtlᵀ,
// the sample count N and the expert features' sum of squares Σ ‖z_ind‖²
// (which the reconstruction error of a correction needs: see SumSquares),
// all in float64. Its memory is O(D²) whatever the number of samples.
//
// An Accumulator is not safe for concurrent use. To accumulate in parallel,
// use one Accumulator per shard and Merge them.
type Accumulator struct {
	d int
	n int64
	s []float64 // D×D row-major, S
	g []float64 // D×D row-major, upper triangle of G
	// yy is Σ ‖z_ind‖², valid when yyKnown: an accumulator restored from
	// a state that did not record it never knows it.
	yy      float64
	yyKnown bool

	// Widening buffers for AddFloat32, reused across calls.
	mtl64, ind64 []float64
}

// NewAccumulator returns an empty accumulator for features of dimension d.
// It panics if d ≤ 0.
func NewAccumulator(d int) *Accumulator {
	if d <= 0 {
		panic(fmt.Sprintf("react: NewAccumulator: invalid feature dimension %d", d))
	}
	return &Accumulator{d: d, s: make([]float64, d*d), g: make([]float64, d*d), yyKnown: true}
}

// D returns the feature dimension.
func (a *Accumulator) D() int { return a.d }

// N returns the number of samples accumulated so far.
func (a *Accumulator) N() int64 { return a.n }

// SumSquares returns Σ ‖z_ind‖² over the samples accumulated so far, and
// whether it is known: it is not when the accumulator was restored from a
// state that did not record it (RestoreAccumulator, a checkpoint written
// before it was), or merged with such an accumulator.
func (a *Accumulator) SumSquares() (yy float64, ok bool) { return a.yy, a.yyKnown }

// AddFloat64 adds a batch of samples. mtl holds the merged backbone's
// features and ind the expert's, each row-major rows×D with one sample per
// row; row i of mtl and row i of ind come from the same input. The lengths
// must be equal multiples of D. A batch with a NaN or infinite value is
// rejected as a whole, with an error naming the row, and leaves the
// accumulator unchanged.
func (a *Accumulator) AddFloat64(mtl, ind []float64) error {
	rows, err := a.checkBatch(len(mtl), len(ind))
	if err != nil || rows == 0 {
		return err
	}
	if err := a.checkFinite(mtl, "merged"); err != nil {
		return err
	}
	if err := a.checkFinite(ind, "expert"); err != nil {
		return err
	}
	a.add(rows, mtl, ind)
	return nil
}

// AddFloat32 is like AddFloat64 for float32 features. The batch is widened
// to float64 in a buffer that the accumulator reuses, and accumulated in
// float64.
func (a *Accumulator) AddFloat32(mtl, ind []float32) error {
	rows, err := a.checkBatch(len(mtl), len(ind))
	if err != nil || rows == 0 {
		return err
	}
	a.mtl64 = widen(a.mtl64, mtl)
	a.ind64 = widen(a.ind64, ind)
	if err := a.checkFinite(a.mtl64, "merged"); err != nil {
		return err
	}
	if err := a.checkFinite(a.ind64, "expert"); err != nil {
		return err
	}
	a.add(rows, a.mtl64, a.ind64)
	return nil
}

// widen copies src into buf, growing buf if needed, and returns it.
func widen(buf []float64, src []float32) []float64 {
	if cap(buf) < len(src) {
		buf = make([]float64, len(src))
	}
	buf = buf[:len(src)]
	for i, v := range src {
		buf[i] = float64(v)
	}
	return buf
}

// checkBatch validates the batch lengths and returns the number of rows.
func (a *Accumulator) checkBatch(nMtl, nInd int) (int, error) {
	if nMtl != nInd {
		return 0, fmt.Errorf("accumulate: merged batch has %d values but expert batch has %d", nMtl, nInd)
	}
	if nMtl%a.d != 0 {
		return 0, fmt.Errorf("accumulate: batch of %d values is not a whole number of rows of D=%d", nMtl, a.d)
	}
	return nMtl / a.d, nil
}

// checkFinite reports the first row of z holding a NaN or infinite value.
func (a *Accumulator) checkFinite(z []float64, which string) error {
	for i, v := range z {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			row, col := i/a.d, i%a.d
			return fmt.Errorf("accumulate: %s features, row %d of the batch (sample %d), column %d: value %v: want finite values",
				which, row, a.n+int64(row), col, v)
		}
	}
	return nil
}

// add accumulates S += Z_indᵀ Z_mtl, G += Z_mtlᵀ Z_mtl and yy += ‖Z_ind‖²_F,
// where the Z are rows×D with one sample per row.
func (a *Accumulator) add(rows int, mtl, ind []float64) {
	d := a.d
	zm := blas64.General{Rows: rows, Cols: d, Stride: d, Data: mtl}
	zi := blas64.General{Rows: rows, Cols: d, Stride: d, Data: ind}
	blas64.Gemm(blas.Trans, blas.NoTrans, 1, zi, zm, 1, a.sGeneral())
	blas64.Syrk(blas.Trans, 1, zm, 1, a.gSymmetric())
	yy := 0.0
	for _, v := range ind {
		yy += v * v
	}
	a.yy += yy
	a.n += int64(rows)
}

func (a *Accumulator) sGeneral() blas64.General {
	return blas64.General{Rows: a.d, Cols: a.d, Stride: a.d, Data: a.s}
}

func (a *Accumulator) gSymmetric() blas64.Symmetric {
	return blas64.Symmetric{N: a.d, Stride: a.d, Uplo: blas.Upper, Data: a.g}
}

// Merge adds the statistics of other, accumulated over a disjoint shard of
// the same task's samples, to a. other is unchanged.
func (a *Accumulator) Merge(other *Accumulator) error {
	if other == nil {
		return errors.New("accumulate: merge: nil accumulator")
	}
	if other.d != a.d {
		return fmt.Errorf("accumulate: merge: dimension D=%d does not match D=%d", other.d, a.d)
	}
	// Read N first so that a.Merge(a) doubles the statistics.
	n := other.n
	blas64.Axpy(1, blas64.Vector{N: len(other.s), Inc: 1, Data: other.s}, blas64.Vector{N: len(a.s), Inc: 1, Data: a.s})
	blas64.Axpy(1, blas64.Vector{N: len(other.g), Inc: 1, Data: other.g}, blas64.Vector{N: len(a.g), Inc: 1, Data: a.g})
	a.yy += other.yy
	a.yyKnown = a.yyKnown && other.yyKnown
	a.n += n
	return nil
}

// Stats returns the statistics of the task named name whose expert is
// expert: copies of S and G, N, and W_orth = Procrustes(S). It fails if name
// is not a valid task name or no samples were accumulated.
func (a *Accumulator) Stats(name string, expert ModelRef) (*TaskStats, error) {
	if err := ValidateTaskName(name); err != nil {
		return nil, fmt.Errorf("accumulate: %w", err)
	}
	if a.n == 0 {
		return nil, fmt.Errorf("accumulate: task %q: no samples accumulated", name)
	}
	d := a.d
	s := mat.NewDense(d, d, append([]float64(nil), a.s...))
	g := mat.NewSymDense(d, nil)
	raw := g.RawSymmetric()
	for i := 0; i < d; i++ {
		copy(raw.Data[i*raw.Stride+i:i*raw.Stride+d], a.g[i*d+i:i*d+d])
	}
	w, err := Procrustes(s)
	if err != nil {
		return nil, fmt.Errorf("accumulate: task %q: %w", name, err)
	}
	st := &TaskStats{Name: name, N: a.n, S: s, G: g, WOrth: w, Expert: expert}
	if a.yyKnown {
		st.SumSquares = a.yy
	}
	return st, nil
}
