package react

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
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

// BenchmarkCorrect measures the sidecar's hot path, ẑ = W z for a batch:
// one SGEMM with OpenBLAS, one GEMV per row with gonum's pure Go.
func BenchmarkCorrect(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, d := range []int{512, 768} {
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
}

// BenchmarkFirstRequest measures the latency of the first request (one
// feature row) with a new preference, T=8 tasks: "factored" factorises C_p
// and answers through the factorisation (what the sidecar does on a cache
// miss), "formed" forms W_p first and then applies it.
func BenchmarkFirstRequest(b *testing.B) {
	for _, d := range []int{512, 768} {
		c := benchComponents(d, 8)
		s, err := NewSolver(c, DefaultOptions(c))
		if err != nil {
			b.Fatal(err)
		}
		p := Uniform(s.Tasks())
		rng := rand.New(rand.NewPCG(9, 9))
		z, dst := make([]float32, d), make([]float32, d)
		for i := range z {
			z[i] = float32(rng.NormFloat64())
		}
		b.Run(fmt.Sprintf("D=%d/T=8/factored", d), func(b *testing.B) {
			var sc FactoredScratch
			for i := 0; i < b.N; i++ {
				f, err := s.Factor(p)
				if err != nil {
					b.Fatal(err)
				}
				if err := f.Correct(dst, z, &sc); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/request")
		})
		b.Run(fmt.Sprintf("D=%d/T=8/formed", d), func(b *testing.B) {
			w := mat.NewDense(d, d, nil)
			w32 := make([]float32, d*d)
			for i := 0; i < b.N; i++ {
				if err := s.SolveInto(w, p); err != nil {
					b.Fatal(err)
				}
				if _, err := Float32MatrixTo(w32, w); err != nil {
					b.Fatal(err)
				}
				if err := Correct(dst, z, w32, d); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/request")
		})
	}
}

// BenchmarkAccumulate measures streaming accumulation of float32 batches of
// 256 paired rows (S by GEMM, G by SYRK, in float64).
func BenchmarkAccumulate(b *testing.B) {
	const batch = 256
	for _, d := range []int{512, 768} {
		b.Run(fmt.Sprintf("D=%d", d), func(b *testing.B) {
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
		})
	}
}

// BenchmarkPeak measures the machine's limit for the backend in use: one
// large DGEMM and one large SGEMM (n = 2048), in GFLOP/s.
func BenchmarkPeak(b *testing.B) {
	const n = 2048
	rng := rand.New(rand.NewPCG(7, 8))
	a64 := make([]float64, n*n)
	for i := range a64 {
		a64[i] = rng.NormFloat64()
	}
	a32 := make([]float32, n*n)
	for i := range a32 {
		a32[i] = float32(a64[i])
	}
	b.Run("DGEMM/n=2048", func(b *testing.B) {
		x := blas64.General{Rows: n, Cols: n, Stride: n, Data: a64}
		c := blas64.General{Rows: n, Cols: n, Stride: n, Data: make([]float64, n*n)}
		for i := 0; i < b.N; i++ {
			blas64.Gemm(blas.NoTrans, blas.Trans, 1, x, x, 0, c)
		}
		b.ReportMetric(2*n*n*n*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
	b.Run("SGEMM/n=2048", func(b *testing.B) {
		x := blas32.General{Rows: n, Cols: n, Stride: n, Data: a32}
		c := blas32.General{Rows: n, Cols: n, Stride: n, Data: make([]float32, n*n)}
		for i := 0; i < b.N; i++ {
			blas32.Gemm(blas.NoTrans, blas.Trans, 1, x, x, 0, c)
		}
		b.ReportMetric(2*n*n*n*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
}
