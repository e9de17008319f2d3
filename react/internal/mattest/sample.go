package mattest

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// Sample is one task's raw calibration data, one sample per row: the
// reference values of the tests (RawS, RawG, RefSystem) are built from it
// directly, with plain loops, independently of the code under test.
type Sample struct {
	Name     string
	MTL, Ind []float64 // N×D row-major: z_mtl and z_ind
	N, D     int
	M        *mat.Dense // the map z_ind = M z_mtl + noise the samples were drawn from
}

// RandomSample draws n samples of dimension d with z_ind = M z_mtl + noise
// for a random M, so that S and G are generic.
func RandomSample(rng *rand.Rand, name string, n, d int, noise float64) Sample {
	m := make([]float64, d*d)
	for i := range m {
		m[i] = rng.NormFloat64() / math.Sqrt(float64(d))
	}
	for i := 0; i < d; i++ {
		m[i*d+i] += 1
	}
	s := Sample{Name: name, N: n, D: d, MTL: make([]float64, n*d), Ind: make([]float64, n*d), M: mat.NewDense(d, d, m)}
	for r := 0; r < n; r++ {
		for j := 0; j < d; j++ {
			s.MTL[r*d+j] = rng.NormFloat64()
		}
		for i := 0; i < d; i++ {
			v := noise * rng.NormFloat64()
			for j := 0; j < d; j++ {
				v += m[i*d+j] * s.MTL[r*d+j]
			}
			s.Ind[r*d+i] = v
		}
	}
	return s
}

// Samples returns one task of dimension d for each sample count in ns,
// named task0, task1, ..., drawn by RandomSample with noise 0.3. The same
// arguments give the same samples.
func Samples(seed uint64, d int, ns ...int) []Sample {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([]Sample, len(ns))
	for i, n := range ns {
		out[i] = RandomSample(rng, fmt.Sprintf("task%d", i), n, d, 0.3)
	}
	return out
}

// Names returns the samples' task names, in order.
func Names(samples []Sample) []string {
	out := make([]string, len(samples))
	for i, s := range samples {
		out[i] = s.Name
	}
	return out
}

// RawS returns Σ z_ind z_mtlᵀ by plain loops.
func (s Sample) RawS() *mat.Dense { return s.outerSum(s.Ind, s.MTL) }

// RawG returns Σ z_mtl z_mtlᵀ by plain loops, as a dense matrix.
func (s Sample) RawG() *mat.Dense { return s.outerSum(s.MTL, s.MTL) }

// outerSum returns Σ x_r y_rᵀ over the N rows of x and y (N×D row-major).
func (s Sample) outerSum(x, y []float64) *mat.Dense {
	out := mat.NewDense(s.D, s.D, nil)
	for r := 0; r < s.N; r++ {
		for i := 0; i < s.D; i++ {
			for j := 0; j < s.D; j++ {
				out.Set(i, j, out.At(i, j)+x[r*s.D+i]*y[r*s.D+j])
			}
		}
	}
	return out
}

// ZRows returns the samples as N×D matrices (one sample per row), copies
// of MTL and Ind.
func (s Sample) ZRows() (mtl, ind *mat.Dense) {
	return mat.NewDense(s.N, s.D, append([]float64(nil), s.MTL...)),
		mat.NewDense(s.N, s.D, append([]float64(nil), s.Ind...))
}
