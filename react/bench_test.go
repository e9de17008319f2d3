package react

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// benchComponents returns t tasks of dimension d with cheap synthetic
// statistics: a random S, a diagonally dominant (so SPD) random G, and a
// permutation as W_orth. Only the shapes and the SPD property matter for
// timing; building realistic statistics would cost O(T·D³) per setup.
func benchComponents(d, t int) *Components {
	rng := rand.New(rand.NewPCG(uint64(d), uint64(t)))
	c := &Components{D: d, Beta: 0.1, Normalization: NormSum}
	for k := 0; k < t; k++ {
		s := mat.NewDense(d, d, nil)
		g := mat.NewSymDense(d, nil)
		w := mat.NewDense(d, d, nil)
		perm := rng.Perm(d)
		for i := 0; i < d; i++ {
			for j := 0; j < d; j++ {
				s.Set(i, j, rng.NormFloat64())
			}
			for j := i; j < d; j++ {
				g.SetSym(i, j, rng.Float64()-0.5)
			}
			g.SetSym(i, i, float64(d))
			w.Set(i, perm[i], 1)
		}
		c.Tasks = append(c.Tasks, &TaskStats{Name: taskName(k), N: 1000, S: s, G: g, WOrth: w})
	}
	return c
}

// BenchmarkSolve measures W_p assembly (Σ p_t A_t, Σ p_t C_t, Cholesky,
// condition estimate and two triangular solves) for a uniform preference.
func BenchmarkSolve(b *testing.B) {
	for _, d := range []int{512, 768, 1024} {
		all := benchComponents(d, 20)
		for _, t := range []int{2, 8, 20} {
			b.Run(fmt.Sprintf("D=%d/T=%d", d, t), func(b *testing.B) {
				c := *all
				c.Tasks = all.Tasks[:t]
				s, err := NewSolver(&c, DefaultOptions(&c))
				if err != nil {
					b.Fatal(err)
				}
				p := Uniform(s.Tasks())
				dst := mat.NewDense(d, d, nil)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := s.SolveInto(dst, p); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/solve")
			})
		}
	}
}

// BenchmarkCorrect measures the sidecar's hot path, ẑ = W z for a batch.
func BenchmarkCorrect(b *testing.B) {
	const d = 512
	rng := rand.New(rand.NewPCG(1, 2))
	w := make([]float32, d*d)
	for i := range w {
		w[i] = float32(rng.NormFloat64())
	}
	for _, batch := range []int{1, 64, 256} {
		b.Run(fmt.Sprintf("B=%d/D=%d", batch, d), func(b *testing.B) {
			z, dst := make([]float32, batch*d), make([]float32, batch*d)
			for i := range z {
				z[i] = float32(rng.NormFloat64())
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := Correct(dst, z, w, d); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(batch*b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// BenchmarkAccumulate measures streaming accumulation of float32 batches of
// 256 paired rows at D = 512.
func BenchmarkAccumulate(b *testing.B) {
	const d, batch = 512, 256
	rng := rand.New(rand.NewPCG(3, 4))
	mtl, ind := make([]float32, batch*d), make([]float32, batch*d)
	for i := range mtl {
		mtl[i], ind[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
	}
	acc := NewAccumulator(d)
	b.SetBytes(int64(2 * batch * d * 4))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := acc.AddFloat32(mtl, ind); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(batch*b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkHypervolume measures the exact hypervolume of 100 points on a
// concave 8-D front.
func BenchmarkHypervolume(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	const n, d = 100, 8
	points := make([][]float64, n)
	for i := range points {
		points[i] = make([]float64, d)
		norm := 0.0
		for k := range points[i] {
			points[i][k] = 0.5 + 0.5*rng.Float64()
			norm += points[i][k] * points[i][k]
		}
		for k := range points[i] {
			points[i][k] /= math.Sqrt(norm)
		}
	}
	ref := make([]float64, d)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := Hypervolume(points, ref); err != nil {
			b.Fatal(err)
		}
	}
}
