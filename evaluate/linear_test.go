package evaluate

import (
	"math"
	"math/rand/v2"
	"strings"
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
			// R² does not depend on the backbone features' scale, so the
			// ridge must not either (it is relative to their size).
			for _, scale := range []float32{1e-4, 1e4} {
				xs := make([]float32, len(x))
				for i, v := range x {
					xs[i] = scale * v
				}
				in, held, err := FitLinear(xs, y, tc.d, 7)
				if err != nil || math.Abs(in-wantIn) > 1e-6 || math.Abs(held-wantHeld) > 1e-6 {
					t.Errorf("backbone features × %g: R² %.9f / %.9f (%v), want %.9f / %.9f", scale, in, held, err, wantIn, wantHeld)
				}
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
		// 13 values of d=3 would make four rows and a remainder.
		{"ragged", seq(13), seq(13), 3},
		{"mismatched", seq(12), seq(9), 3},
		// Varying features, so that only the count is wrong.
		{"too few", seq(9), seq(9), 3},
		{"constant expert", []float32{1, 2, 3, 4, 5, 6, 7, 8}, make([]float32, 8), 1},
	} {
		if _, _, err := FitLinear(tc.x, tc.y, tc.d, 0); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

// seq returns n distinct, varying values.
func seq(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(i*i%7) + float32(i)/3
	}
	return v
}

// TestFitLinearDegenerate covers the two cases the ridge is there for,
// against what they must give whatever the fit: backbone features that
// are all zero (W = 0, so the residual is Σ‖y‖² and R² = 1 − Σ‖y‖² /
// Σ‖y − mean(y)‖², negative without an intercept) and fewer samples than
// D (the in-sample fit interpolates: R² = 1).
func TestFitLinearDegenerate(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	randn := func(n int, mean float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(mean + rng.NormFloat64())
		}
		return v
	}
	noIntercept := func(y []float32, d int, idx ...[]int) float64 {
		yy, tot := 0.0, 0.0
		for _, h := range idx {
			for _, i := range h {
				for j := 0; j < d; j++ {
					yy += float64(y[i*d+j]) * float64(y[i*d+j])
				}
			}
			tot += totalVar(y, d, h)
		}
		return 1 - yy/tot
	}
	for _, tc := range []struct {
		name     string
		n, d     int
		x, y     []float32
		wantIn   func(n int, y []float32) float64
		wantHeld func(n int, y []float32) float64 // nil: not checked
	}{
		{"zero backbone", 40, 3, make([]float32, 40*3), randn(40*3, 2),
			func(n int, y []float32) float64 { return noIntercept(y, 3, idxRange(n)) },
			func(n int, y []float32) float64 {
				perm := rand.New(rand.NewPCG(0, 0)).Perm(n)
				return noIntercept(y, 3, perm[:n/2], perm[n/2:])
			}},
		{"fewer samples than D, centred", 6, 10, randn(6*10, 0), randn(6*10, 0),
			func(int, []float32) float64 { return 1 }, nil},
		{"fewer samples than D, offset", 6, 10, randn(6*10, 5), randn(6*10, 1),
			func(int, []float32) float64 { return 1 }, nil},
	} {
		in, held, err := FitLinear(tc.x, tc.y, tc.d, 0)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if want := tc.wantIn(tc.n, tc.y); math.Abs(in-want) > 1e-6 {
			t.Errorf("%s: in-sample R² = %.9f, want %.9f", tc.name, in, want)
		}
		if tc.wantHeld != nil {
			if want := tc.wantHeld(tc.n, tc.y); math.Abs(held-want) > 1e-6 {
				t.Errorf("%s: held-out R² = %.9f, want %.9f", tc.name, held, want)
			}
		}
	}
}

func idxRange(n int) []int {
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	return all
}

// TestWriteMarkdownLinear checks the Markdown's table of linear fits,
// written out by hand: present with one fit or more, one row per fit in
// order, R² to three decimals (in-sample, then held-out), absent without.
func TestWriteMarkdownLinear(t *testing.T) {
	const header = "| backbone | task | samples | R² in-sample | R² held-out | R² held-out, ridge | ridge |\n|---|---|---|---|---|---|---|\n"
	for _, tc := range []struct {
		name   string
		linear []LinearFit
		want   string // "": no table
	}{
		{"none", nil, ""},
		{"one", []LinearFit{{Backbone: "TA", Task: "mnist", Samples: 2000, InSample: 0.98765, Heldout: 0.5, Ridged: 0.6, Ridge: 0.01}},
			header + "| TA | mnist | 2000 | 0.988 | 0.500 | 0.600 | 0.01 |\n"},
		{"negative held-out", []LinearFit{
			{Backbone: "TA", Task: "a", Samples: 500, InSample: 1, Heldout: -0.25, Ridged: 0.7, Ridge: 1},
			{Backbone: "TIES", Task: "b", Samples: 7, InSample: 0.1234, Heldout: 0.0006, Ridged: 0.0006, Ridge: 1e-06}},
			header + "| TA | a | 500 | 1.000 | -0.250 | 0.700 | 1 |\n| TIES | b | 7 | 0.123 | 0.001 | 0.001 | 1e-06 |\n"},
	} {
		r := &Result{Tasks: []string{"a"}, Samples: []int{1}, Linear: tc.linear}
		var md strings.Builder
		if err := r.WriteMarkdown(&md); err != nil {
			t.Fatal(err)
		}
		got := md.String()
		if tc.want == "" {
			if strings.Contains(got, "R² in-sample") {
				t.Errorf("%s: a linear table:\n%s", tc.name, got)
			}
			continue
		}
		if !strings.HasSuffix(got, tc.want) {
			t.Errorf("%s: Markdown ends\n%s\nwant\n%s", tc.name, got, tc.want)
		}
	}
}

// ridgeR2QR is an independent reference for BestHeldout at one ridge: the
// ridge map of each half by QR on the augmented system [X; √ε I] W = [Y; 0],
// scored on the other half.
func ridgeR2QR(t *testing.T, x, y []float32, d int, h1, h2 []int, rel float64) float64 {
	t.Helper()
	fitOn := func(fit []int) *mat.Dense {
		trace := 0.0
		for _, i := range fit {
			for j := 0; j < d; j++ {
				trace += float64(x[i*d+j]) * float64(x[i*d+j])
			}
		}
		eps := rel * trace / float64(d)
		a := mat.NewDense(len(fit)+d, d, nil)
		b := mat.NewDense(len(fit)+d, d, nil)
		for r, i := range fit {
			for j := 0; j < d; j++ {
				a.Set(r, j, float64(x[i*d+j]))
				b.Set(r, j, float64(y[i*d+j]))
			}
		}
		for j := 0; j < d; j++ {
			a.Set(len(fit)+j, j, math.Sqrt(eps))
		}
		var w mat.Dense
		if err := w.Solve(a, b); err != nil {
			t.Fatal(err)
		}
		return &w
	}
	res := func(w *mat.Dense, score []int) float64 {
		r := 0.0
		for _, i := range score {
			for k := 0; k < d; k++ {
				v := float64(y[i*d+k])
				for j := 0; j < d; j++ {
					v -= float64(x[i*d+j]) * w.At(j, k)
				}
				r += v * v
			}
		}
		return r
	}
	return 1 - (res(fitOn(h1), h2)+res(fitOn(h2), h1))/(totalVar(y, d, h1)+totalVar(y, d, h2))
}

func TestBestHeldout(t *testing.T) {
	for _, tc := range []struct {
		name  string
		n, d  int
		noise float64
	}{
		{"more samples than D", 80, 6, 0.3},
		{"fewer samples per half than D", 30, 20, 1}, // the plain map overfits: a ridge wins
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, 6))
			x := make([]float32, tc.n*tc.d)
			y := make([]float32, tc.n*tc.d)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			for i := 0; i < tc.n; i++ {
				for k := 0; k < tc.d; k++ {
					// y_k = x_k + x_{k+1} + noise
					y[i*tc.d+k] = x[i*tc.d+k] + x[i*tc.d+(k+1)%tc.d] + float32(tc.noise*rng.NormFloat64())
				}
			}
			got, ridge, err := BestHeldout(x, y, tc.d, 11)
			if err != nil {
				t.Fatal(err)
			}
			perm := rand.New(rand.NewPCG(11, 0)).Perm(tc.n)
			h1, h2 := perm[:tc.n/2], perm[tc.n/2:]
			best, bestRidge := math.Inf(-1), 0.0
			for _, rel := range RidgeGrid {
				if v := ridgeR2QR(t, x, y, tc.d, h1, h2, rel); v > best {
					best, bestRidge = v, rel
				}
			}
			if math.Abs(got-best) > 1e-6 || ridge != bestRidge {
				t.Errorf("BestHeldout = %.9f at ridge %g; QR reference %.9f at %g", got, ridge, best, bestRidge)
			}
			_, plain, err := FitLinear(x, y, tc.d, 11)
			if err != nil {
				t.Fatal(err)
			}
			if got < plain-1e-9 {
				t.Errorf("best ridge R² %.6f below the plain held-out R² %.6f", got, plain)
			}
			if tc.n/2 < tc.d && !(ridge > RidgeGrid[0] && got > plain+0.05) {
				t.Errorf("fewer samples than D: ridge %g, R² %.4f against plain %.4f: no ridge helped", ridge, got, plain)
			}
		})
	}
}
