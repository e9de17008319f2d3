package evaluate

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// r2QR is an independent reference: least squares by QR on the rows, then
// R² from the explicit residuals.
func r2QR(t *testing.T, x, y []float32, d int, fit, score []int) float64 {
	t.Helper()
	rows := func(v []float32, idx []int) *mat.Dense {
		m := mat.NewDense(len(idx), d, nil)
		for r, i := range idx {
			for j := 0; j < d; j++ {
				m.Set(r, j, float64(v[i*d+j]))
			}
		}
		return m
	}
	var w mat.Dense // X W = Y, so the map is Wᵀ
	if err := w.Solve(rows(x, fit), rows(y, fit)); err != nil {
		t.Fatal(err)
	}
	xs, ys := rows(x, score), rows(y, score)
	var pred mat.Dense
	pred.Mul(xs, &w)
	res, tot := 0.0, 0.0
	for j := 0; j < d; j++ {
		mean := 0.0
		for r := range score {
			mean += ys.At(r, j) / float64(len(score))
		}
		for r := range score {
			e := ys.At(r, j) - pred.At(r, j)
			res += e * e
			c := ys.At(r, j) - mean
			tot += c * c
		}
	}
	return 1 - res/tot
}

func TestFitLinear(t *testing.T) {
	for _, tc := range []struct {
		name  string
		n, d  int
		noise float64
	}{
		{"exact map", 60, 5, 0},
		{"noisy", 200, 6, 0.5},
		{"very noisy", 300, 4, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			a := make([]float64, tc.d*tc.d)
			for i := range a {
				a[i] = rng.NormFloat64()
			}
			x := make([]float32, tc.n*tc.d)
			y := make([]float32, tc.n*tc.d)
			for i := 0; i < tc.n; i++ {
				for j := 0; j < tc.d; j++ {
					x[i*tc.d+j] = float32(rng.NormFloat64() + 1)
				}
				for k := 0; k < tc.d; k++ {
					v := tc.noise * rng.NormFloat64()
					for j := 0; j < tc.d; j++ {
						v += a[k*tc.d+j] * float64(x[i*tc.d+j])
					}
					y[i*tc.d+k] = float32(v)
				}
			}
			in, held, err := FitLinear(x, y, tc.d, 7)
			if err != nil {
				t.Fatal(err)
			}
			all := make([]int, tc.n)
			for i := range all {
				all[i] = i
			}
			wantIn := r2QR(t, x, y, tc.d, all, all)
			if math.Abs(in-wantIn) > 1e-6 {
				t.Errorf("in-sample R² = %.9f, QR reference %.9f", in, wantIn)
			}
			// Held-out: the same halves as FitLinear (its seeded split),
			// residuals summed over both directions.
			perm := rand.New(rand.NewPCG(7, 0)).Perm(tc.n)
			h1, h2 := perm[:tc.n/2], perm[tc.n/2:]
			res1 := (1 - r2QR(t, x, y, tc.d, h1, h2)) * totalVar(y, tc.d, h2)
			res2 := (1 - r2QR(t, x, y, tc.d, h2, h1)) * totalVar(y, tc.d, h1)
			wantHeld := 1 - (res1+res2)/(totalVar(y, tc.d, h1)+totalVar(y, tc.d, h2))
			if math.Abs(held-wantHeld) > 1e-6 {
				t.Errorf("held-out R² = %.9f, QR reference %.9f", held, wantHeld)
			}
			if tc.noise == 0 && (in < 1-1e-6 || held < 1-1e-6) {
				t.Errorf("exact map: R² %.9f / %.9f, want 1", in, held)
			}
			if tc.noise > 0 && !(held < in) {
				t.Errorf("noisy map: held-out R² %.4f not below in-sample %.4f", held, in)
			}
		})
	}
}

func totalVar(y []float32, d int, idx []int) float64 {
	tot := 0.0
	for j := 0; j < d; j++ {
		mean := 0.0
		for _, i := range idx {
			mean += float64(y[i*d+j]) / float64(len(idx))
		}
		for _, i := range idx {
			c := float64(y[i*d+j]) - mean
			tot += c * c
		}
	}
	return tot
}

func TestFitLinearRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		x, y []float32
		d    int
	}{
		{"ragged", make([]float32, 10), make([]float32, 10), 3},
		{"mismatched", make([]float32, 12), make([]float32, 9), 3},
		{"too few", make([]float32, 9), make([]float32, 9), 3},
		{"constant expert", []float32{1, 2, 3, 4, 5, 6, 7, 8}, make([]float32, 8), 1},
	} {
		if _, _, err := FitLinear(tc.x, tc.y, tc.d, 0); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}
