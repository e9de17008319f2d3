package livestats

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/heldout"
)

// directRecon is Σ ‖W z − y‖² and Σ ‖y‖² by plain loops in float64.
func directRecon(w mat.Matrix, mtl, ind []float32, d int) (resid, target float64) {
	for r := range len(mtl) / d {
		for i := range d {
			v := -float64(ind[r*d+i])
			for j := range d {
				v += w.At(i, j) * float64(mtl[r*d+j])
			}
			resid += v * v
			target += float64(ind[r*d+i]) * float64(ind[r*d+i])
		}
	}
	return resid, target
}

func TestReconError(t *testing.T) {
	const d = 7
	rng := rand.New(rand.NewPCG(3, 3))
	mtl, ind := rows(rng, 13, d)
	w := mat.NewDense(d, d, nil)
	for i := range d {
		for j := range d {
			w.Set(i, j, rng.NormFloat64())
		}
	}
	resid, target, err := ReconError(w.RawMatrix().Data, mtl, ind, d)
	if err != nil {
		t.Fatal(err)
	}
	wr, wt := directRecon(w, mtl, ind, d)
	if math.Abs(resid-wr) > 1e-12*wr || math.Abs(target-wt) > 1e-12*wt {
		t.Errorf("ReconError = %v, %v; rows give %v, %v", resid, target, wr, wt)
	}
	for _, bad := range []struct {
		w        []float64
		mtl, ind []float32
	}{
		{w.RawMatrix().Data[:d], mtl, ind},
		{w.RawMatrix().Data, mtl[:d], ind},
		{w.RawMatrix().Data, mtl[:d+1], ind[:d+1]},
	} {
		if _, _, err := ReconError(bad.w, bad.mtl, bad.ind, d); err == nil {
			t.Errorf("W of %d, rows of %d and %d: no error", len(bad.w), len(bad.mtl), len(bad.ind))
		}
	}
}

// calibrated returns components of tasks a and b calibrated on the given
// rows, with the recorded errors.
func calibrated(t *testing.T, d int, beta float64, data map[string][2][]float32) *react.Components {
	t.Helper()
	c := &react.Components{D: d, Beta: beta, Normalization: react.NormSum}
	for _, name := range []string{"a", "b"} {
		a := react.NewAccumulator(d)
		if err := a.AddFloat32(data[name][0], data[name][1]); err != nil {
			t.Fatal(err)
		}
		st, err := a.Stats(name, react.ModelRef{})
		if err != nil {
			t.Fatal(err)
		}
		c.Tasks = append(c.Tasks, st)
	}
	if err := heldout.Record(c); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestStalenessMatchesRecorded sends a components file's own calibration
// rows as traffic: the live error equals the recorded one. Under other
// options the reference is computed from the statistics, and checked
// against Ŵ_t applied to the rows; without a recorded sum of squares there
// is none.
func TestStalenessMatchesRecorded(t *testing.T) {
	const d = 5
	rng := rand.New(rand.NewPCG(11, 12))
	data := map[string][2][]float32{}
	for _, name := range []string{"a", "b"} {
		m, i := rows(rng, 60, d)
		data[name] = [2][]float32{m, i}
	}
	c := calibrated(t, d, 0.5, data)
	set := goodSettings(t.TempDir())
	set.Fraction, set.MinSamples = 1, 50
	send := func(s *Sampler, model, task string) {
		for r := 0; r < 60; r += 6 {
			x, _ := s.Admit(Request{Model: model})
			if err := x.Add(data[task][0][r*d:(r+6)*d], data[task][1][r*d:(r+6)*d]); err != nil {
				t.Fatal(err)
			}
		}
	}

	for _, opts := range []react.Options{react.DefaultOptions(c), {Beta: 3, Normalization: react.NormMean}} {
		s, err := New(set, d)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Watch(c, opts); err != nil {
			t.Fatal(err)
		}
		send(s, "model_a", "a")
		send(s, "model_b", "b")
		solver, err := react.NewOneShotSolver(c, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range []string{"a", "b"} {
			st, ok := s.Staleness(task)
			if !ok || st.Rows != 60 {
				t.Fatalf("%v: task %s: %+v, %v", opts, task, st, ok)
			}
			w, err := solver.Single(task)
			if err != nil {
				t.Fatal(err)
			}
			resid, target := directRecon(w, data[task][0], data[task][1], d)
			want := resid / target
			if math.Abs(st.Live-want) > 1e-9*want {
				t.Errorf("%v: task %s: live %.12g, rows give %.12g", opts, task, st.Live, want)
			}
			if math.Abs(st.Recorded-want) > 1e-9*want {
				t.Errorf("%v: task %s: recorded %.12g, rows give %.12g", opts, task, st.Recorded, want)
			}
			if ct, _ := c.Task(task); opts == react.DefaultOptions(c) && st.Recorded != ct.ReconError {
				t.Errorf("task %s: reference %v is not the file's %v", task, st.Recorded, ct.ReconError)
			}
		}
	}

	// Another task's inputs sent to model_a: the error rises.
	s, _ := New(set, d)
	if err := s.Watch(c, react.DefaultOptions(c)); err != nil {
		t.Fatal(err)
	}
	mtl, _ := rows(rand.New(rand.NewPCG(99, 99)), 60, d)
	x, _ := s.Admit(Request{Model: "model_a"})
	if err := x.Add(mtl, data["a"][1]); err != nil { // inputs that are not a's
		t.Fatal(err)
	}
	if st, _ := s.Staleness("a"); !(st.Live > 2*st.Recorded) {
		t.Errorf("drifted inputs: live %v, recorded %v: want it well above", st.Live, st.Recorded)
	}

	// A file without the sum of squares: no reference; a file without the
	// task: not watched; other D: refused.
	old := *c
	old.Tasks = []*react.TaskStats{ptr(*c.Tasks[0])}
	old.Tasks[0].SumSquares, old.Tasks[0].ReconError = 0, 0
	if err := s.Watch(&old, react.DefaultOptions(&old)); err != nil {
		t.Fatal(err)
	}
	if st, ok := s.Staleness("a"); !ok || st.Recorded != 0 || st.Rows != 0 {
		t.Errorf("old file: %+v, %v", st, ok)
	}
	if _, ok := s.Staleness("b"); ok {
		t.Error("task b is watched, but the components do not have it")
	}
	other := *c
	other.D = d + 1
	if err := s.Watch(&other, react.DefaultOptions(c)); err == nil {
		t.Error("Watch of components of another D: no error")
	}
}

func ptr[T any](v T) *T { return &v }
