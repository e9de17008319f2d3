package react

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/react/internal/linalg"
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
	for _, d := range []int{256, 512, 768} {
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

// BenchmarkGemmOrGemv compares, for batches of a few rows, the two ways
// Correct can multiply them (gemmFor picks): one GEMM ("gemm") and one GEMV
// per row ("gemv"), with W in cache ("hot": the same W again) and in memory
// ("cold": 64 MiB written between calls, outside the timer, so run it with
// a fixed count: -benchtime 300x). The GEMM is skipped with the pure-Go
// backend, which multiplies every batch by GEMVs. bench/README.md, "The
// react step inside Triton, profiled", records a run with OpenBLAS:
//
//	GOMAXPROCS=1 go test -tags openblas -run '^$' -bench GemmOrGemv -benchtime 300x -count 3 ./react/
func BenchmarkGemmOrGemv(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	flush := make([]byte, 64<<20)
	for _, d := range []int{256, 512, 768} {
		w := make([]float32, d*d)
		for i := range w {
			w[i] = float32(rng.NormFloat64())
		}
		for _, cache := range []string{"hot", "cold"} {
			for _, rows := range []int{2, 3, 4, 6, 8, 12, 16} {
				for _, path := range []string{"gemm", "gemv"} {
					b.Run(fmt.Sprintf("D=%d/%s/rows=%d/%s", d, cache, rows, path), func(b *testing.B) {
						z, dst := make([]float32, rows*d), make([]float32, rows*d)
						for i := range z {
							z[i] = float32(rng.NormFloat64())
						}
						defer func(old bool) { gemmBatch = old }(gemmBatch)
						if path == "gemv" {
							gemmBatch = false
						}
						if path == "gemm" && !gemmFor(gemmMinRows, d) {
							b.Skip("the backend multiplies a batch by GEMVs")
						}
						b.ResetTimer()
						for i := 0; i < b.N; i++ {
							if cache == "cold" {
								b.StopTimer()
								for j := 0; j < len(flush); j += 64 {
									flush[j]++
								}
								b.StartTimer()
							}
							if path == "gemm" {
								// Correct's GEMM, whatever gemmFor would pick.
								blas32.Gemm(blas.NoTrans, blas.Trans, 1, blas32.General{Rows: rows, Cols: d, Stride: d, Data: z},
									blas32.General{Rows: d, Cols: d, Stride: d, Data: w}, 0, blas32.General{Rows: rows, Cols: d, Stride: d, Data: dst})
							} else if err := Correct(dst, z, w, d); err != nil {
								b.Fatal(err)
							}
						}
						b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N), "µs/batch")
					})
				}
			}
		}
	}
}

// BenchmarkFirstRequest measures the latency of the first request (one
// feature row) with a new preference, T=8 tasks: "factored" factorises C_p
// and answers through the factorisation (what the sidecar does on a cache
// miss), "formed" forms W_p first and then applies it; "bounded" with the
// solver's condition bound proved (ProveConditionBound, as the serving
// profiles do), which spares each solve Dpocon, "estimated" without.
func BenchmarkFirstRequest(b *testing.B) {
	for _, d := range []int{256, 512, 768} {
		c := benchComponents(d, 8)
		est, err := NewSolver(c, DefaultOptions(c))
		if err != nil {
			b.Fatal(err)
		}
		bnd, err := NewSolver(c, DefaultOptions(c))
		if err != nil {
			b.Fatal(err)
		}
		if !bnd.ProveConditionBound() {
			b.Fatal("condition bound not proved")
		}
		for _, cond := range []struct {
			name string
			s    *Solver
		}{{"estimated", est}, {"bounded", bnd}} {
			firstRequest(b, fmt.Sprintf("D=%d/T=8/%s", d, cond.name), cond.s)
		}
	}
}

func firstRequest(b *testing.B, name string, s *Solver) {
	d := s.D()
	{
		p := Uniform(s.Tasks())
		rng := rand.New(rand.NewPCG(9, 9))
		z, dst := make([]float32, d), make([]float32, d)
		for i := range z {
			z[i] = float32(rng.NormFloat64())
		}
		b.Run(name+"/factored", func(b *testing.B) {
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
		b.Run(name+"/formed", func(b *testing.B) {
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

// BenchmarkFactorTemplate measures what one new preference costs the
// sidecar at the production template's D = 1280, T = 8 (the weighted sums
// and the factorisation, condition bound proved): docker/k8s/base's
// admission.solve_rate is sized by it.
func BenchmarkFactorTemplate(b *testing.B) {
	c := benchComponents(1280, 8)
	s, err := NewSolver(c, DefaultOptions(c))
	if err != nil {
		b.Fatal(err)
	}
	if !s.ProveConditionBound() {
		b.Fatal("condition bound not proved")
	}
	p := Uniform(s.Tasks())
	for b.Loop() {
		if _, err := s.Factor(p); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/solve")
}

// BenchmarkAccumulate measures streaming accumulation of float32 batches of
// 256 paired rows (S by GEMM, G by SYRK, in float64).
func BenchmarkAccumulate(b *testing.B) {
	const batch = 256
	for _, d := range []int{256, 512, 768} {
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

// BenchmarkSolveSteps times each step of W_p = A_p C_p⁻¹ at T = 8 tasks on
// the backend in use with one thread, and the formulations of the last
// step side by side, with a DGEMM of the same size as the peer: "sums" (A_p
// and C_p from the tasks' statistics), "potrf", "pocon", then W_p from U by
// two triangular solves ("trsm×2"), blocked into GEMMs and solves with the
// diagonal blocks ("blocked-trsm"), blocked into GEMMs and products with
// the diagonal blocks' inverses ("blocked-inverted", what SolveInto does
// with OpenBLAS), by U⁻¹ and two triangular products ("trtri+trmm×2"), or
// by C_p⁻¹ and a symmetric product ("potri+symm"). Flop counts: D³/3 for
// potrf, 2D³ for the triangular solves and trtri+trmm×2 (D³/3 more for
// trtri), 2D³/3 + 2D³ for potri+symm, 2D³ for the DGEMM.
func BenchmarkSolveSteps(b *testing.B) {
	SetBackendThreads(1)
	for _, d := range []int{256, 512, 768} {
		c := benchComponents(d, 8)
		s, err := NewSolver(c, DefaultOptions(c))
		if err != nil {
			b.Fatal(err)
		}
		ws := s.pool.Get().(*workspace)
		if err := s.Weights(ws.w, Uniform(s.Tasks())); err != nil {
			b.Fatal(err)
		}
		ap := blas64.General{Rows: d, Cols: d, Stride: d, Data: make([]float64, d*d)}
		cp := make([]float64, d*d)
		anorm := linalg.WeightedSums(ap, cp, s.stats, ws.w, s.opt.Beta, ws.work[:d])
		sym := blas64.Symmetric{N: d, Stride: d, Uplo: blas.Upper, Data: cp}
		if _, ok := lapack64.Potrf(sym); !ok {
			b.Fatal("C_p not positive definite")
		}
		u := blas64.Triangular{N: d, Stride: d, Uplo: blas.Upper, Diag: blas.NonUnit, Data: cp}
		fd := float64(d)
		flops := func(b *testing.B, f float64) {
			b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/op")
			b.ReportMetric(f*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		}
		name := func(step string) string { return fmt.Sprintf("D=%d/%s", d, step) }
		b.Run(name("sums"), func(b *testing.B) {
			a := blas64.General{Rows: d, Cols: d, Stride: d, Data: make([]float64, d*d)}
			c := make([]float64, d*d)
			for i := 0; i < b.N; i++ {
				linalg.WeightedSums(a, c, s.stats, ws.w, s.opt.Beta, ws.work[:d])
			}
			b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/op")
		})
		b.Run(name("potrf"), func(b *testing.B) {
			c := make([]float64, d*d)
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				a := blas64.General{Rows: d, Cols: d, Stride: d, Data: make([]float64, d*d)}
				linalg.WeightedSums(a, c, s.stats, ws.w, s.opt.Beta, ws.work[:d])
				b.StartTimer()
				lapack64.Potrf(blas64.Symmetric{N: d, Stride: d, Uplo: blas.Upper, Data: c})
			}
			flops(b, fd*fd*fd/3)
		})
		b.Run(name("pocon"), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				lapack64.Pocon(sym, anorm, ws.work, ws.iwork)
			}
			b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/op")
		})
		w := blas64.General{Rows: d, Cols: d, Stride: d, Data: make([]float64, d*d)}
		b.Run(name("trsm×2"), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				copy(w.Data, ap.Data)
				blas64.Trsm(blas.Right, blas.NoTrans, 1, u, w)
				blas64.Trsm(blas.Right, blas.Trans, 1, u, w)
			}
			flops(b, 2*fd*fd*fd)
		})
		b.Run(name("blocked-trsm"), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				copy(w.Data, ap.Data)
				linalg.CholSolveRight(u, w, true)
			}
			flops(b, 2*fd*fd*fd)
		})
		b.Run(name("blocked-inverted"), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				copy(w.Data, ap.Data)
				linalg.SolveRows(u, w, true, 1)
			}
			flops(b, 2*fd*fd*fd)
		})
		b.Run(name("trtri+trmm×2"), func(b *testing.B) {
			inv := blas64.Triangular{N: d, Stride: d, Uplo: blas.Upper, Diag: blas.NonUnit, Data: make([]float64, d*d)}
			for i := 0; i < b.N; i++ {
				copy(inv.Data, cp)
				lapack64.Trtri(inv)
				copy(w.Data, ap.Data)
				// W = A_p U⁻¹ U⁻ᵀ
				blas64.Trmm(blas.Right, blas.NoTrans, 1, inv, w)
				blas64.Trmm(blas.Right, blas.Trans, 1, inv, w)
			}
			flops(b, 2*fd*fd*fd+fd*fd*fd/3)
		})
		b.Run(name("potri+symm"), func(b *testing.B) {
			inv := make([]float64, d*d)
			for i := 0; i < b.N; i++ {
				copy(inv, cp)
				lapack64.Potri(blas64.Triangular{N: d, Stride: d, Uplo: blas.Upper, Diag: blas.NonUnit, Data: inv})
				blas64.Symm(blas.Right, 1, blas64.Symmetric{N: d, Stride: d, Uplo: blas.Upper, Data: inv}, ap, 0, w)
			}
			flops(b, 2*fd*fd*fd/3+2*fd*fd*fd)
		})
		b.Run(name("dgemm (peer)"), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, ap, ap, 0, w)
			}
			flops(b, 2*fd*fd*fd)
		})
		s.pool.Put(ws)
	}
}

// BenchmarkProveConditionBound measures what a serving profile pays once,
// at load, to skip each solve's condition estimate: T = 8 Cholesky
// factorisations of order D.
func BenchmarkProveConditionBound(b *testing.B) {
	for _, d := range []int{256, 512, 768} {
		c := benchComponents(d, 8)
		b.Run(fmt.Sprintf("D=%d/T=8", d), func(b *testing.B) {
			b.StopTimer()
			for i := 0; i < b.N; i++ {
				s, err := NewSolver(c, DefaultOptions(c))
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if !s.ProveConditionBound() {
					b.Fatal("not proved")
				}
				b.StopTimer()
			}
			b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/op")
		})
	}
}
