package heldout

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/react"
)

// pairs returns n random feature pairs of size d, y = M z + noise.
func pairs(rng *rand.Rand, m *mat.Dense, n, d int, noise float64) (z, y []float64) {
	z, y = make([]float64, n*d), make([]float64, n*d)
	for i := range z {
		z[i] = rng.NormFloat64()
	}
	for r := range n {
		for i := range d {
			v := noise * rng.NormFloat64()
			for j := range d {
				v += m.At(i, j) * z[r*d+j]
			}
			y[r*d+i] = v
		}
	}
	return z, y
}

// directError is Σ ‖W z − y‖² over raw rows.
func directError(w mat.Matrix, z, y []float64, d int) float64 {
	e := 0.0
	for r := range len(z) / d {
		for i := range d {
			v := -y[r*d+i]
			for j := range d {
				v += w.At(i, j) * z[r*d+j]
			}
			e += v * v
		}
	}
	return e
}

func stats(t *testing.T, name string, z, y []float64, d int) (*react.TaskStats, float64) {
	t.Helper()
	a := react.NewAccumulator(d)
	if err := a.AddFloat64(z, y); err != nil {
		t.Fatal(err)
	}
	st, err := a.Stats(name, react.ModelRef{Name: "expert_" + name})
	if err != nil {
		t.Fatal(err)
	}
	yy := 0.0
	for _, v := range y {
		yy += v * v
	}
	return st, yy
}

func TestErrorMatchesRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const d = 5
	m := mat.NewDense(d, d, nil)
	w := mat.NewDense(d, d, nil)
	for i := range d {
		for j := range d {
			m.Set(i, j, rng.NormFloat64())
			w.Set(i, j, rng.NormFloat64())
		}
	}
	z, y := pairs(rng, m, 40, d, 0.3)
	st, yy := stats(t, "a", z, y, d)
	got, want := Error(w, st, yy), directError(w, z, y, d)
	if math.Abs(got-want) > 1e-9*want {
		t.Errorf("Error = %g, rows give %g", got, want)
	}
}

func TestSelect(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const d = 6
	fit := &react.Components{D: d, Beta: 1, Normalization: react.NormSum}
	var held []Task
	var raw [][2][]float64
	for _, name := range []string{"a", "b"} {
		m := mat.NewDense(d, d, nil)
		for i := range d {
			for j := range d {
				m.Set(i, j, rng.NormFloat64())
			}
		}
		// Few fitting samples, much noise: some regularisation pays.
		zf, yf := pairs(rng, m, 8, d, 1)
		zh, yh := pairs(rng, m, 200, d, 1)
		st, _ := stats(t, name, zf, yf, d)
		fit.Tasks = append(fit.Tasks, st)
		hs, yy := stats(t, name, zh, yh, d)
		held = append(held, Task{Stats: hs, YY: yy})
		raw = append(raw, [2][]float64{zh, yh})
	}
	grid := BetaGrid([]react.Normalization{react.NormSum, react.NormMean})
	cands, best, err := Select(fit, held, grid)
	if err != nil {
		t.Fatal(err)
	}
	if len(cands) != 14 {
		t.Fatalf("%d candidates", len(cands))
	}
	// Independent: each candidate's one-hot error from W solved per task
	// and the raw held-out rows.
	for _, c := range cands {
		s, err := react.NewSolver(fit, c.Options)
		if err != nil {
			t.Fatal(err)
		}
		want := 0.0
		for i, name := range []string{"a", "b"} {
			p, _ := react.OneHot([]string{"a", "b"}, name)
			w, err := s.Solve(p)
			if err != nil {
				t.Fatal(err)
			}
			want += directError(w, raw[i][0], raw[i][1], d) / held[i].YY / 2
		}
		if math.Abs(c.OneHot-want) > 1e-9 {
			t.Errorf("β=%g %s: one-hot error %g, rows give %g", c.Beta, c.Normalization, c.OneHot, want)
		}
		if c.Score < cands[best].Score {
			t.Errorf("β=%g %s scores %g below the chosen %g", c.Beta, c.Normalization, c.Score, cands[best].Score)
		}
	}
	// With 8 samples of D=6 and noise, β = 10⁻⁴ under sum is nearly least
	// squares and overfits: the choice is more regularised.
	if cands[best].Options == grid[0] {
		t.Errorf("chose the least regularised option %+v", cands[best].Options)
	}

	if _, _, err := Select(fit, held[:1], grid); err == nil {
		t.Error("Select with a task missing its held-out samples: no error")
	}
}
