package react

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestProcrustesRecoversRotation checks that when Z_ind = Q Z_mtl for a known
// orthogonal Q, W_orth = Q, and that W_orth is orthogonal.
func TestProcrustesRecoversRotation(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 1))
	for _, d := range []int{1, 2, 5, 12} {
		q := randomOrthogonal(rng, d)
		s := sample{Name: "t", N: 3 * d, D: d, MTL: make([]float64, 3*d*d), Ind: make([]float64, 3*d*d)}
		for r := 0; r < s.N; r++ {
			for j := 0; j < d; j++ {
				s.MTL[r*d+j] = rng.NormFloat64()
			}
			for i := 0; i < d; i++ {
				for j := 0; j < d; j++ {
					s.Ind[r*d+i] += q.At(i, j) * s.MTL[r*d+j]
				}
			}
		}
		w, err := Procrustes(s.RawS())
		if err != nil {
			t.Fatal(err)
		}
		assertClose(t, "W_orth vs Q", w, q, 1e-12)
		assertOrthogonal(t, w)
	}
}

// TestProcrustesOptimal checks on noisy data that W_orth is orthogonal,
// matches the independent formula S (SᵀS)^(-1/2), and fits
// ‖W Z_mtl − Z_ind‖ at least as well as random orthogonal matrices and
// perturbations of itself.
func TestProcrustesOptimal(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 1))
	const d = 6
	s := randomSample(rng, "t", 80, d, 1)
	S := s.RawS()
	w, err := Procrustes(S)
	if err != nil {
		t.Fatal(err)
	}
	assertOrthogonal(t, w)
	assertClose(t, "W_orth vs S(SᵀS)^-1/2", w, orthRef(t, S), 1e-10)

	fit := func(r *mat.Dense) float64 {
		total := 0.0
		for n := 0; n < s.N; n++ {
			for i := 0; i < d; i++ {
				v := -s.Ind[n*d+i]
				for j := 0; j < d; j++ {
					v += r.At(i, j) * s.MTL[n*d+j]
				}
				total += v * v
			}
		}
		return total
	}
	best := fit(w)
	for trial := 0; trial < 200; trial++ {
		r := randomOrthogonal(rng, d)
		if f := fit(r); f < best {
			t.Fatalf("random orthogonal matrix fits better: %v < %v", f, best)
		}
	}
	// Small rotations of W_orth: W exp(εK) for skew K, via Cayley transform.
	for trial := 0; trial < 50; trial++ {
		k := mat.NewDense(d, d, nil)
		for i := 0; i < d; i++ {
			for j := i + 1; j < d; j++ {
				v := 1e-3 * rng.NormFloat64()
				k.Set(i, j, v)
				k.Set(j, i, -v)
			}
		}
		var plus, minus, cay, r mat.Dense
		eye := mat.NewDense(d, d, nil)
		for i := 0; i < d; i++ {
			eye.Set(i, i, 1)
		}
		plus.Add(eye, k)
		minus.Sub(eye, k)
		if err := cay.Solve(&minus, &plus); err != nil {
			t.Fatal(err)
		}
		r.Mul(w, &cay)
		if f := fit(&r); f < best {
			t.Fatalf("perturbed W_orth fits better: %v < %v", f, best)
		}
	}
}

func TestProcrustesErrors(t *testing.T) {
	if _, err := Procrustes(mat.NewDense(2, 2, []float64{1, 2, 3, 0})); err != nil {
		t.Errorf("finite input: %v", err)
	}
	nan := mat.NewDense(2, 2, []float64{1, 2, 3, 0})
	nan.Set(1, 1, math.NaN())
	if _, err := Procrustes(nan); err == nil {
		t.Error("NaN input succeeded")
	}
}
