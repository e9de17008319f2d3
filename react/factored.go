package react

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/react/internal/linalg"
)

// Factored is W_p = A_p C_p⁻¹ held as A_p and the Cholesky factor U of
// C_p = UᵀU, without W_p itself. Getting it costs the weighted sums and the
// factorisation (about D³/3 flops), not the two triangular solves with D
// right-hand sides that forming W_p adds (about 2D³): a new preference's
// first requests can be answered at once (Correct), while W_p is formed
// (Form) for the ones that follow. A Factored is immutable and safe for
// concurrent use.
type Factored struct {
	d     int
	pref  string
	ap    []float64 // A_p, D×D row-major
	u     []float64 // U in the upper triangle, D×D row-major
	stats SolveStats
}

// Factor computes A_p and the Cholesky factor of C_p for p, with the same
// checks and errors as SolveIntoStats (a *SolveError for a C_p that is not
// positive definite or too ill-conditioned).
func (s *Solver) Factor(p Preference) (*Factored, error) {
	ws := s.pool.Get().(*workspace)
	defer s.pool.Put(ws)
	if err := s.Weights(ws.w, p); err != nil {
		return nil, err
	}
	d := s.d
	f := &Factored{d: d, pref: p.String(), ap: make([]float64, d*d), u: make([]float64, d*d)}
	_, st, err := s.factorWeights(blas64.General{Rows: d, Cols: d, Stride: d, Data: f.ap}, f.u, ws, p, "")
	f.stats = st
	if err != nil {
		return nil, err
	}
	return f, nil
}

// D returns the feature dimension.
func (f *Factored) D() int { return f.d }

// Stats reports on the factorisation: the estimated condition number of C_p.
func (f *Factored) Stats() SolveStats { return f.stats }

func (f *Factored) triangular() blas64.Triangular {
	return blas64.Triangular{N: f.d, Stride: f.d, Uplo: blas.Upper, Diag: blas.NonUnit, Data: f.u}
}

// Form returns W_p = A_p C_p⁻¹ as a new D×D matrix: A_p copied, then the two
// triangular solves of W_p UᵀU = A_p (in parallel over blocks of rows when
// GOMAXPROCS and the backend's threads allow), as SolveInto does.
func (f *Factored) Form() *mat.Dense {
	w := mat.NewDense(f.d, f.d, append([]float64(nil), f.ap...))
	linalg.SolveRows(f.triangular(), w.RawMatrix(), gemmSolve, solveWorkers())
	return w
}

// smallBatch is the most rows Factored.Correct solves one at a time.
const smallBatch = 4

// FactoredScratch is the float64 working memory of Factored.Correct, to be
// reused across calls (one per goroutine).
type FactoredScratch struct {
	m, out []float64
}

// Correct stores in dst the corrected batch ẑ = A_p C_p⁻¹ z of every row of
// z (B×D row-major, float32), computed in float64 without W_p: the rows of
// the batch, Z, become Z C_p⁻¹ by two triangular solves with U, then
// Z C_p⁻¹ A_pᵀ by one GEMM, about 4·B·D² flops. dst must have z's length
// and must not overlap it. sc, when not nil, supplies reusable scratch.
func (f *Factored) Correct(dst, z []float32, sc *FactoredScratch) error {
	d := f.d
	rows, err := CheckBatch(dst, z, d)
	if err != nil || rows == 0 {
		return err
	}
	if sc == nil {
		sc = new(FactoredScratch)
	}
	sc.m = widen(sc.m, z)
	if cap(sc.out) < len(z) {
		sc.out = make([]float64, len(z))
	}
	sc.out = sc.out[:len(z)]
	ap := blas64.General{Rows: d, Cols: d, Stride: d, Data: f.ap}
	if rows <= smallBatch {
		// Row by row, with vector routines: for a few rows the matrix
		// routines' blocking costs more than it saves.
		u := f.triangular()
		for r := 0; r < rows; r++ {
			x := blas64.Vector{N: d, Inc: 1, Data: sc.m[r*d : r*d+d]}
			blas64.Trsv(blas.Trans, u, x)   // Uᵀ y = z
			blas64.Trsv(blas.NoTrans, u, x) // U x = y: x = C_p⁻¹ z
			blas64.Gemv(blas.NoTrans, 1, ap, x, 0, blas64.Vector{N: d, Inc: 1, Data: sc.out[r*d : r*d+d]})
		}
	} else {
		m := blas64.General{Rows: rows, Cols: d, Stride: d, Data: sc.m}
		linalg.SolveRows(f.triangular(), m, gemmSolve, solveWorkers())
		blas64.Gemm(blas.NoTrans, blas.Trans, 1, m, ap, 0, blas64.General{Rows: rows, Cols: d, Stride: d, Data: sc.out})
	}
	for i, v := range sc.out {
		dst[i] = float32(v)
	}
	return nil
}
