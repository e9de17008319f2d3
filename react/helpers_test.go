package react

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/react/internal/mattest"
)

// The helpers in this file build reference values directly from raw samples
// with plain loops and gonum's general-purpose decompositions, independently
// of the code under test.

// sample is one task's raw calibration data, one sample per row.
type sample struct {
	name     string
	mtl, ind []float64 // N×D row-major
	n, d     int
	m        *mat.Dense // the map z_ind = M z_mtl + noise the samples were drawn from
}

// randomSample draws n samples of dimension d with z_ind = M z_mtl + noise
// for a random M, so that S and G are generic.
func randomSample(rng *rand.Rand, name string, n, d int, noise float64) sample {
	m := make([]float64, d*d)
	for i := range m {
		m[i] = rng.NormFloat64() / math.Sqrt(float64(d))
	}
	for i := 0; i < d; i++ {
		m[i*d+i] += 1
	}
	s := sample{name: name, n: n, d: d, mtl: make([]float64, n*d), ind: make([]float64, n*d), m: mat.NewDense(d, d, m)}
	for r := 0; r < n; r++ {
		for j := 0; j < d; j++ {
			s.mtl[r*d+j] = rng.NormFloat64()
		}
		for i := 0; i < d; i++ {
			v := noise * rng.NormFloat64()
			for j := 0; j < d; j++ {
				v += m[i*d+j] * s.mtl[r*d+j]
			}
			s.ind[r*d+i] = v
		}
	}
	return s
}

// rawS returns Σ z_ind z_mtlᵀ by plain loops.
func (s sample) rawS() *mat.Dense {
	out := mat.NewDense(s.d, s.d, nil)
	for r := 0; r < s.n; r++ {
		for i := 0; i < s.d; i++ {
			for j := 0; j < s.d; j++ {
				out.Set(i, j, out.At(i, j)+s.ind[r*s.d+i]*s.mtl[r*s.d+j])
			}
		}
	}
	return out
}

// rawG returns Σ z_mtl z_mtlᵀ by plain loops, as a dense matrix.
func (s sample) rawG() *mat.Dense {
	out := mat.NewDense(s.d, s.d, nil)
	for r := 0; r < s.n; r++ {
		for i := 0; i < s.d; i++ {
			for j := 0; j < s.d; j++ {
				out.Set(i, j, out.At(i, j)+s.mtl[r*s.d+i]*s.mtl[r*s.d+j])
			}
		}
	}
	return out
}

// zRows returns the samples as N×D matrices (one sample per row).
func (s sample) zRows() (mtl, ind *mat.Dense) {
	return mat.NewDense(s.n, s.d, append([]float64(nil), s.mtl...)),
		mat.NewDense(s.n, s.d, append([]float64(nil), s.ind...))
}

// orthRef returns the orthogonal polar factor of a full-rank square s as
// s (sᵀs)^(-1/2), from a symmetric eigendecomposition: a formula independent
// of the SVD that Procrustes uses.
func orthRef(t *testing.T, s mat.Matrix) *mat.Dense {
	t.Helper()
	n, _ := s.Dims()
	var sts mat.SymDense
	sts.SymOuterK(1, mat.DenseCopyOf(s).T())
	var eig mat.EigenSym
	if !eig.Factorize(&sts, true) {
		t.Fatal("orthRef: eigendecomposition failed")
	}
	vals := eig.Values(nil)
	var v mat.Dense
	eig.VectorsTo(&v)
	inv := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			x := 0.0
			for k := 0; k < n; k++ {
				x += v.At(i, k) * v.At(j, k) / math.Sqrt(vals[k])
			}
			inv.Set(i, j, x)
		}
	}
	out := mat.NewDense(n, n, nil)
	out.Mul(s, inv)
	return out
}

// components accumulates the samples into Components (through the code under
// test, the Accumulator; reference values never come from here).
func components(t testing.TB, beta float64, norm Normalization, samples ...sample) *Components {
	t.Helper()
	c := &Components{D: samples[0].d, Beta: beta, Normalization: norm}
	for _, s := range samples {
		acc := NewAccumulator(s.d)
		if err := acc.AddFloat64(s.mtl, s.ind); err != nil {
			t.Fatal(err)
		}
		st, err := acc.Stats(s.name, ModelRef{Name: "expert_" + s.name})
		if err != nil {
			t.Fatal(err)
		}
		c.Tasks = append(c.Tasks, st)
	}
	return c
}

// refSystem returns A_p = Σ p_t (S'_t + β W_orth_t) and C_p = Σ p_t (G'_t + β I)
// from raw samples, with W_orth from orthRef.
func refSystem(t *testing.T, beta float64, norm Normalization, p []float64, samples ...sample) (ap, cp *mat.Dense) {
	t.Helper()
	d := samples[0].d
	ap, cp = mat.NewDense(d, d, nil), mat.NewDense(d, d, nil)
	for k, s := range samples {
		if p[k] == 0 {
			continue
		}
		scale := 1.0
		if norm == NormMean {
			scale = 1 / float64(s.n)
		}
		S, G, W := s.rawS(), s.rawG(), orthRef(t, s.rawS())
		for i := 0; i < d; i++ {
			for j := 0; j < d; j++ {
				a := scale*S.At(i, j) + beta*W.At(i, j)
				c := scale * G.At(i, j)
				if i == j {
					c += beta
				}
				ap.Set(i, j, ap.At(i, j)+p[k]*a)
				cp.Set(i, j, cp.At(i, j)+p[k]*c)
			}
		}
	}
	return ap, cp
}

// relErr and assertClose compare matrices by the relative Frobenius error.
var (
	relErr      = mattest.RelErr
	assertClose = mattest.AssertClose
)

func mustPref(t testing.TB, spec string, tasks []string) Preference {
	t.Helper()
	p, err := ParsePreference(spec, tasks)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustSolver(t testing.TB, c *Components, opt Options) *Solver {
	t.Helper()
	s, err := NewSolver(c, opt)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func randomOrthogonal(rng *rand.Rand, d int) *mat.Dense {
	a := mat.NewDense(d, d, nil)
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			a.Set(i, j, rng.NormFloat64())
		}
	}
	var qr mat.QR
	qr.Factorize(a)
	var q mat.Dense
	qr.QTo(&q)
	return &q
}

func names(samples []sample) []string {
	out := make([]string, len(samples))
	for i, s := range samples {
		out[i] = s.name
	}
	return out
}

func taskName(i int) string { return fmt.Sprintf("task%d", i) }

// syntheticComponents are T tasks of dimension d whose values only need
// to be generic (mattest.Synthetic), named task0, task1, ..., with
// N_t = 10 D: for react's own tests, the components reacttest.Synthetic
// gives the packages that import react.
func syntheticComponents(d, tasks int) *Components {
	c := &Components{D: d, Beta: 0.1, Normalization: NormSum}
	for k, st := range mattest.Synthetic(d, tasks) {
		c.Tasks = append(c.Tasks, &TaskStats{Name: taskName(k), N: int64(10 * d), S: st.S, G: st.G, WOrth: st.WOrth})
	}
	return c
}
