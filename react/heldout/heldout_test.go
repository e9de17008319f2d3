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

// TestRecord checks the recorded reconstruction error of each task's own
// correction against Ŵ_t solved by gonum's general solver and applied to
// the raw rows, under both normalisations.
func TestRecord(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const d = 4
	m := mat.NewDense(d, d, nil)
	for i := range d {
		for j := range d {
			m.Set(i, j, rng.NormFloat64())
		}
	}
	type rows struct{ z, y []float64 }
	var data []rows
	c := &react.Components{D: d, Beta: 0.7}
	for k, name := range []string{"a", "b", "c"} {
		z, y := pairs(rng, m, 15+10*k, d, 0.4)
		st, _ := stats(t, name, z, y, d)
		data = append(data, rows{z, y})
		c.Tasks = append(c.Tasks, st)
	}
	c.Tasks[2].SumSquares = 0 // as if read from an older file
	for _, norm := range []react.Normalization{react.NormSum, react.NormMean} {
		c.Normalization = norm
		c.Tasks[2].ReconError = 1 // cleared
		if err := Record(c); err != nil {
			t.Fatal(err)
		}
		for k, st := range c.Tasks[:2] {
			scale := 1.0
			if norm == react.NormMean {
				scale = 1 / float64(st.N)
			}
			var a, cc, w mat.Dense
			a.Scale(scale, st.S)
			var bw mat.Dense
			bw.Scale(c.Beta, st.WOrth)
			a.Add(&a, &bw)
			cc.Scale(scale, st.G)
			for i := range d {
				cc.Set(i, i, cc.At(i, i)+c.Beta)
			}
			// W C = A, C symmetric: Cᵀ Wᵀ = Aᵀ.
			var wt mat.Dense
			if err := wt.Solve(&cc, a.T()); err != nil {
				t.Fatal(err)
			}
			w.CloneFrom(wt.T())
			yy := 0.0
			for _, v := range data[k].y {
				yy += v * v
			}
			want := directError(&w, data[k].z, data[k].y, d) / yy
			if math.Abs(st.ReconError-want) > 1e-9*want || want <= 0 {
				t.Errorf("%s: task %s: ReconError = %.12g, rows give %.12g", norm, st.Name, st.ReconError, want)
			}
		}
		if c.Tasks[2].ReconError != 0 {
			t.Errorf("%s: task without its sum of squares: ReconError = %v, want 0", norm, c.Tasks[2].ReconError)
		}
	}

	// β = 0 with fewer samples than D: that task's Ŵ_t cannot be solved;
	// it is reported and left unrecorded, the others recorded.
	z, y := pairs(rng, m, 2, d, 0.4)
	few, _ := stats(t, "few", z, y, d)
	c.Tasks = append(c.Tasks, few)
	c.Beta = 0
	err := Record(c)
	if err == nil || few.ReconError != 0 || c.Tasks[0].ReconError <= 0 {
		t.Errorf("β = 0, N < D: err = %v, ReconError %v (few), %v (a)", err, few.ReconError, c.Tasks[0].ReconError)
	}

	// Only the tasks named.
	c.Beta = 0.7
	c.Tasks[0].ReconError, c.Tasks[1].ReconError = 0, 0
	if err := Record(c, "b"); err != nil {
		t.Fatal(err)
	}
	if c.Tasks[0].ReconError != 0 || c.Tasks[1].ReconError <= 0 {
		t.Errorf("Record(c, b): ReconError %v (a), %v (b); want only b's", c.Tasks[0].ReconError, c.Tasks[1].ReconError)
	}
	if err := Record(c, "nope"); err == nil {
		t.Error("Record of an unknown task: no error")
	}
}
