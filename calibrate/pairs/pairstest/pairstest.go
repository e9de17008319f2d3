// Package pairstest is test support only: the synthetic paired features
// that the tests of calibrate and calibrate/pairs accumulate, fit and
// solve from.
package pairstest

import (
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// Features returns paired n×d merged and expert features drawn from rng:
// the merged ones are Gaussian with a scale that grows with the column,
// the expert's a fixed random distortion of them (near the identity) plus
// noise, so that a task's statistics are well conditioned and the
// correction has something to learn.
func Features(rng *rand.Rand, n, d int) (mtl, ind *mat.Dense) {
	mtl = mat.NewDense(n, d, nil)
	ind = mat.NewDense(n, d, nil)
	m := mat.NewDense(d, d, nil)
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			m.Set(i, j, 0.3*rng.NormFloat64())
		}
		m.Set(i, i, m.At(i, i)+1)
	}
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			mtl.Set(i, j, rng.NormFloat64()*(1+0.2*float64(j)))
		}
	}
	ind.Mul(mtl, m.T())
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			ind.Set(i, j, ind.At(i, j)+0.1*rng.NormFloat64())
		}
	}
	return mtl, ind
}
