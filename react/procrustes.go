package react

import (
	"errors"
	"fmt"

	"gonum.org/v1/gonum/mat"
)

// Procrustes returns the solution W = U Vᵀ of the orthogonal Procrustes
// problem, where U Σ Vᵀ is the singular value decomposition of the
// cross-covariance s = Σ z_ind z_mtlᵀ. W maximises tr(Wᵀ s) over orthogonal
// matrices, so it minimises ‖W Z_mtl − Z_ind‖_F among them.
//
// For an r×c matrix s the result is r×c with orthonormal columns (r ≥ c) or
// rows (r < c); for square s it is orthogonal. When s is rank deficient the
// optimum is not unique and Procrustes returns one of the optima.
func Procrustes(s mat.Matrix) (*mat.Dense, error) {
	r, c := s.Dims()
	if r == 0 || c == 0 {
		return nil, errors.New("procrustes: empty matrix")
	}
	if !allFinite(s) {
		return nil, errors.New("procrustes: matrix has a NaN or infinite entry")
	}
	var svd mat.SVD
	if !svd.Factorize(s, mat.SVDThin) {
		return nil, fmt.Errorf("procrustes: SVD of the %d×%d cross-covariance did not converge", r, c)
	}
	var u, v mat.Dense
	svd.UTo(&u)
	svd.VTo(&v)
	w := mat.NewDense(r, c, nil)
	w.Mul(&u, v.T())
	return w, nil
}
