//go:build openblas

package react

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/mat"
	netlapack "gonum.org/v1/netlib/lapack/netlib"
)

// TestOpenBLASInUse: a build with the openblas tag runs its tests on
// OpenBLAS (unless REACT_TEST_BACKEND says otherwise), so that CI's second
// run of the package really tests that backend.
func TestOpenBLASInUse(t *testing.T) {
	if want := envBackend(); want == BackendAuto || want == BackendOpenBLAS {
		if CurrentBackend() != BackendOpenBLAS {
			t.Fatalf("backend %q in a build with the openblas tag, want %q", CurrentBackend(), BackendOpenBLAS)
		}
	}
}

// TestSolveWorkers: the goroutines of a solve times the threads each
// OpenBLAS call may start never exceed GOMAXPROCS: the most that fit, and
// one, never none, when a call's threads alone exceed it; with one thread
// a call every core gets a goroutine.
func TestSolveWorkers(t *testing.T) {
	if CurrentBackend() != BackendOpenBLAS {
		t.Skip("OpenBLAS not in use")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	defer SetBackendThreads(blasThreads())
	for _, procs := range []int{1, 2, 4} {
		runtime.GOMAXPROCS(procs)
		for _, n := range []int{1, 2, 3, 4} {
			SetBackendThreads(n)
			threads, workers := blasThreads(), solveWorkers()
			if threads < 1 || threads > n {
				t.Fatalf("SetBackendThreads(%d): OpenBLAS reports %d threads", n, threads)
			}
			want := 1
			for want*threads < procs && (want+1)*threads <= procs {
				want++
			}
			if workers != want {
				t.Errorf("%d threads a call, GOMAXPROCS %d: %d workers, want %d", threads, procs, workers, want)
			}
		}
	}
}

// spdUpper returns a random symmetric positive definite D×D matrix, full,
// row-major: XXᵀ + D I.
func spdUpper(d int, seed uint64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 1))
	x := mat.NewDense(d, d, nil)
	for i := range d {
		for j := range d {
			x.Set(i, j, rng.NormFloat64())
		}
	}
	var a mat.Dense
	a.Mul(x, x.T())
	for i := range d {
		a.Set(i, i, a.At(i, i)+float64(d))
	}
	return a.RawMatrix().Data
}

// TestOpenBLASPotrf: the backend's Cholesky factorisation (gonum's blocked
// Dpotrf over OpenBLAS's BLAS) gives UᵀU = A to rounding, as LAPACKE's
// does, for both triangles, and refuses a matrix that is not positive
// definite.
func TestOpenBLASPotrf(t *testing.T) {
	for _, d := range []int{1, 7, 64, 200} {
		for _, ul := range []blas.Uplo{blas.Upper, blas.Lower} {
			a := spdUpper(d, uint64(d))
			got := append([]float64(nil), a...)
			if !(openblasLapack{}).Dpotrf(ul, d, got, d) {
				t.Fatalf("D=%d: not positive definite", d)
			}
			f := mat.NewTriDense(d, map[blas.Uplo]mat.TriKind{blas.Upper: mat.Upper, blas.Lower: mat.Lower}[ul], nil)
			for i := range d {
				for j := range d {
					if ul == blas.Upper && j >= i || ul == blas.Lower && j <= i {
						f.SetTri(i, j, got[i*d+j])
					}
				}
			}
			var r mat.Dense
			if ul == blas.Upper {
				r.Mul(f.T(), f)
			} else {
				r.Mul(f, f.T())
			}
			r.Sub(&r, mat.NewDense(d, d, a))
			if e := mat.Norm(&r, 1) / mat.Norm(mat.NewDense(d, d, a), 1); !(e < 1e-13) {
				t.Errorf("D=%d %c: ‖UᵀU − A‖₁/‖A‖₁ = %.3g", d, ul, e)
			}
		}
	}
	a := spdUpper(16, 3)
	a[5*16+5] = -1
	if (openblasLapack{}).Dpotrf(blas.Upper, 16, a, 16) {
		t.Error("a matrix with a negative diagonal entry factorised")
	}
}

// BenchmarkPotrfOpenBLAS is the Cholesky factorisation on one core, side
// by side: LAPACKE's (OpenBLAS's own dpotrf, row-major) against the
// backend's (gonum's blocked Dpotrf over OpenBLAS's BLAS).
func BenchmarkPotrfOpenBLAS(b *testing.B) {
	SetBackendThreads(1)
	for _, d := range []int{512, 768} {
		a := spdUpper(d, 1)
		w := make([]float64, d*d)
		for _, impl := range []struct {
			name string
			f    func() bool
		}{
			{"lapacke", func() bool { return netlapack.Implementation{}.Dpotrf(blas.Upper, d, w, d) }},
			{"backend", func() bool { return openblasLapack{}.Dpotrf(blas.Upper, d, w, d) }},
		} {
			b.Run(fmt.Sprintf("D=%d/%s", d, impl.name), func(b *testing.B) {
				for b.Loop() {
					copy(w, a)
					if !impl.f() {
						b.Fatal("not positive definite")
					}
				}
				b.ReportMetric(math.Pow(float64(d), 3)/3/1e9/(b.Elapsed().Seconds()/float64(b.N)), "GFLOP/s")
			})
		}
	}
}
