package react

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"

	"github.com/mergectl/react-triton/react/internal/condbound"
)

// The condition number of C_p, bounded before the solve: the bound and
// why it holds are react/internal/condbound's.

// newGramBounds returns the bounds of s's tasks, from the upper triangles
// of the G_t the solver reads; the caller must still prove them.
func newGramBounds(s *Solver) *condbound.Bounds {
	b := condbound.New(s.d, s.opt.Beta)
	for _, t := range s.stats {
		b.Add(t.G.Data, t.G.Stride, t.Scale)
	}
	return b
}

// proveGramBounds returns the bounds of s's tasks when every G_t is shown
// positive semi-definite within its slack, on the host: a Cholesky
// factorisation of G_t + e_t/2 I succeeds. It returns nil when one fails;
// the solver then estimates every solve's condition. The cost, T
// factorisations of order D once per solver, is what a solver that serves
// many preferences pays to skip Dpocon in each of them.
func proveGramBounds(s *Solver) *condbound.Bounds {
	d := s.d
	b := newGramBounds(s)
	buf := make([]float64, d*d)
	for k, t := range s.stats {
		for i := range d {
			copy(buf[i*d+i:i*d+d], t.G.Data[i*t.G.Stride+i:i*t.G.Stride+d])
			buf[i*d+i] += b.Slack(k) / 2
		}
		if _, ok := lapack64.Potrf(blas64.Symmetric{N: d, Stride: d, Uplo: blas.Upper, Data: buf}); !ok {
			return nil
		}
	}
	return b
}
