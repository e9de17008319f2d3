package livemerge

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/problem"
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/partialfile"
)

const d = 4

var backbone = react.ModelRef{Name: "merged", Output: "feature"}

// data returns n paired rows, y = M z + noise, as float64 values that are
// float32 numbers.
func data(rng *rand.Rand, n int) (z, y []float64) {
	m := make([]float64, d*d)
	for i := range m {
		m[i] = rng.NormFloat64()
	}
	z, y = make([]float64, n*d), make([]float64, n*d)
	for r := range n {
		for j := range d {
			z[r*d+j] = float64(float32(rng.NormFloat64()))
		}
		for i := range d {
			v := 0.2 * rng.NormFloat64()
			for j := range d {
				v += m[i*d+j] * z[r*d+j]
			}
			y[r*d+i] = float64(float32(v))
		}
	}
	return z, y
}

// acc returns the sums of the rows rows of z, y.
func acc(t *testing.T, z, y []float64, rows []int) *react.Accumulator {
	t.Helper()
	a := react.NewAccumulator(d)
	for _, r := range rows {
		if err := a.AddFloat64(z[r*d:(r+1)*d], y[r*d:(r+1)*d]); err != nil {
			t.Fatal(err)
		}
	}
	return a
}

func span(lo, hi int) []int {
	var out []int
	for r := lo; r < hi; r++ {
		out = append(out, r)
	}
	return out
}

func every(rows []int, k int) []int {
	var out []int
	for i, r := range rows {
		if i%k == 0 {
			out = append(out, r)
		}
	}
	return out
}

func without(rows, drop []int) []int {
	skip := map[int]bool{}
	for _, r := range drop {
		skip[r] = true
	}
	var out []int
	for _, r := range rows {
		if !skip[r] {
			out = append(out, r)
		}
	}
	return out
}

// liveFile returns a replica's live file over the given rows of each task,
// every 4th of them held out.
func liveFile(t *testing.T, replica string, window time.Time, rows map[string][]int, z, y map[string][]float64) File {
	t.Helper()
	f := &partialfile.File{D: d, Beta: 10, Normalization: react.NormSum, Backbone: backbone, Run: "live traffic", Replica: replica, Window: window}
	for _, name := range []string{"a", "b"} {
		rs, ok := rows[name]
		if !ok {
			continue
		}
		all := acc(t, z[name], y[name], rs)
		f.Tasks = append(f.Tasks, &partialfile.Task{Name: name, Expert: react.ModelRef{Name: "expert_" + name, Output: "feature"},
			Acc: all, Held: acc(t, z[name], y[name], every(rs, 4)), Done: all.N(), Total: all.N()})
	}
	path := filepath.Join(t.TempDir(), replica+".live.safetensors")
	if err := partialfile.Save(path, f); err != nil {
		t.Fatal(err)
	}
	return File{Path: path, File: f}
}

// directStats are S, G and Σ‖y‖² of rows, by plain loops.
func directStats(z, y []float64, rows []int) (s, g *mat.Dense, yy float64) {
	s, g = mat.NewDense(d, d, nil), mat.NewDense(d, d, nil)
	for _, r := range rows {
		for i := range d {
			yy += y[r*d+i] * y[r*d+i]
			for j := range d {
				s.Set(i, j, s.At(i, j)+y[r*d+i]*z[r*d+j])
				g.Set(i, j, g.At(i, j)+z[r*d+i]*z[r*d+j])
			}
		}
	}
	return s, g, yy
}

func closeRel(a, b mat.Matrix, rel float64) bool {
	return mat.EqualApprox(a, b, rel*mat.Norm(b, math.Inf(1)))
}

// TestMergeReplicas merges two replicas' files, each of half of the same
// rows: the statistics equal plain loops over every row within 1e-12;
// a task below --min-samples keeps the base's statistics, a base task
// without samples is kept, and the order does not depend on the files'.
func TestMergeReplicas(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	z, y := map[string][]float64{}, map[string][]float64{}
	z["a"], y["a"] = data(rng, 200)
	z["b"], y["b"] = data(rng, 30)
	w0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	r0 := liveFile(t, "sidecar-0", w0, map[string][]int{"a": span(0, 100), "b": span(0, 15)}, z, y)
	r1 := liveFile(t, "sidecar-1", w0.Add(time.Hour), map[string][]int{"a": span(100, 200), "b": span(15, 30)}, z, y)

	base := &react.Components{D: d, Beta: 1, Normalization: react.NormSum, Backbone: backbone}
	for _, name := range []string{"b", "c"} {
		zb, yb := data(rng, 50)
		st, err := acc(t, zb, yb, span(0, 50)).Stats(name, react.ModelRef{Name: "old_" + name})
		if err != nil {
			t.Fatal(err)
		}
		base.Tasks = append(base.Tasks, st)
	}

	res, err := Merge([]File{r1, r0}, Options{Base: base, MinSamples: 100})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Components
	if got := c.TaskNames(); strings.Join(got, ",") != "b,c,a" {
		t.Errorf("tasks %v, want b,c,a: the base's order, then the new", got)
	}
	a, _ := c.Task("a")
	s, g, yy := directStats(z["a"], y["a"], span(0, 200))
	if a.N != 200 || !closeRel(a.S, s, 1e-12) || !closeRel(a.G, g, 1e-12) || math.Abs(a.SumSquares-yy) > 1e-12*yy {
		t.Errorf("task a: N=%d, S/G/Σ‖y‖² differ from the rows'", a.N)
	}
	if a.Expert.Name != "expert_a" || a.Provenance["live.files"] != "2" || a.Provenance["live.held_out"] != "50" {
		t.Errorf("task a: expert %v, provenance %v", a.Expert, a.Provenance)
	}
	for _, name := range []string{"b", "c"} {
		got, _ := c.Task(name)
		want, _ := base.Task(name)
		if got != want {
			t.Errorf("task %s: not the base's statistics", name)
		}
	}
	if c.Beta != 10 || c.Normalization != react.NormSum || c.Backbone != backbone {
		t.Errorf("options %v %v %v: want the files'", c.Beta, c.Normalization, c.Backbone)
	}
	want := []Task{{Name: "b", Source: Base, Live: 30, Held: 8, Files: 2}, {Name: "c", Source: Base}, {Name: "a", Source: Live, Live: 200, Held: 50, Files: 2}}
	if len(res.Tasks) != len(want) {
		t.Fatalf("tasks %+v, want %+v", res.Tasks, want)
	}
	for i := range want {
		if res.Tasks[i] != want[i] {
			t.Errorf("task %d: %+v, want %+v", i, res.Tasks[i], want[i])
		}
	}

	// One file is one replica: the same sums as the other order.
	again, err := Merge([]File{r0, r1}, Options{Base: base, MinSamples: 100})
	if err != nil {
		t.Fatal(err)
	}
	a2, _ := again.Components.Task("a")
	if !mat.Equal(a2.S, a.S) || !mat.Equal(a2.G, a.G) {
		t.Error("the sums depend on the order of the files")
	}

	// Without a base, b is left out.
	res, err = Merge([]File{r0, r1}, Options{MinSamples: 100})
	if err != nil {
		t.Fatal(err)
	}
	if names := res.Components.TaskNames(); len(names) != 1 || names[0] != "a" || res.Tasks[1].Source != LeftOut {
		t.Errorf("without a base: tasks %v, report %+v", names, res.Tasks)
	}
	if _, err := Merge([]File{r0}, Options{MinSamples: 1000}); err == nil {
		t.Error("no task with enough samples and no base: no error")
	}
}

// TestBetaAuto checks the held-out scores of one option of the grid
// against Ŵ_t solved by gonum on the rows not held out and applied to the
// held-out rows.
func TestBetaAuto(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	z, y := map[string][]float64{}, map[string][]float64{}
	z["a"], y["a"] = data(rng, 120)
	z["b"], y["b"] = data(rng, 80)
	rows := map[string][]int{"a": span(0, 120), "b": span(0, 80)}
	f := liveFile(t, "r", time.Unix(0, 0), rows, z, y)
	res, err := Merge([]File{f}, Options{BetaAuto: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Candidates) != 14 {
		t.Fatalf("%d candidates, want the grid's 14", len(res.Candidates))
	}
	best := res.Candidates[res.Chosen]
	if res.Components.Beta != best.Beta || res.Components.Normalization != best.Normalization {
		t.Errorf("file options %v %v, chosen %v %v", res.Components.Beta, res.Components.Normalization, best.Beta, best.Normalization)
	}
	for _, cand := range res.Candidates {
		if cand.Score < best.Score {
			t.Errorf("chose score %v, but %v %v scores %v", best.Score, cand.Beta, cand.Normalization, cand.Score)
		}
		if cand.Beta != 1 || cand.Normalization != react.NormSum {
			continue
		}
		oneHot := 0.0
		for _, name := range []string{"a", "b"} {
			held := every(rows[name], 4)
			fit := without(rows[name], held)
			s, g, _ := directStats(z[name], y[name], fit)
			st, err := acc(t, z[name], y[name], fit).Stats(name, react.ModelRef{})
			if err != nil {
				t.Fatal(err)
			}
			// Ŵ (G + βI) = S + β W_orth, with W_orth of the fit rows' S.
			var a, cm, wt mat.Dense
			a.Add(s, st.WOrth)
			cm.CloneFrom(g)
			for i := range d {
				cm.Set(i, i, cm.At(i, i)+1)
			}
			if err := wt.Solve(&cm, a.T()); err != nil {
				t.Fatal(err)
			}
			resid, target := 0.0, 0.0
			for _, r := range held {
				for i := range d {
					v := -y[name][r*d+i]
					for j := range d {
						v += wt.At(j, i) * z[name][r*d+j]
					}
					resid += v * v
					target += y[name][r*d+i] * y[name][r*d+i]
				}
			}
			oneHot += resid / target / 2
		}
		if math.Abs(cand.OneHot-oneHot) > 1e-9*oneHot {
			t.Errorf("β=1 sum: one-hot held-out error %.12g, rows give %.12g", cand.OneHot, oneHot)
		}
		return
	}
	t.Error("no candidate β=1 sum")
}

// TestBetaAutoEveryRowHeld: a task whose every row is held out leaves no
// rows to fit on, so --beta auto scores the options on the other tasks
// alone (the same candidates as without it), and refuses when no task is
// left; the task's statistics are still merged.
func TestBetaAutoEveryRowHeld(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 2))
	z, y := map[string][]float64{}, map[string][]float64{}
	z["a"], y["a"] = data(rng, 60)
	z["b"], y["b"] = data(rng, 80)
	w0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	both := liveFile(t, "r", w0, map[string][]int{"a": span(0, 60), "b": span(0, 80)}, z, y)
	both.Tasks[0].Held = acc(t, z["a"], y["a"], span(0, 60)) // a: every row held out
	bOnly := liveFile(t, "r", w0, map[string][]int{"b": span(0, 80)}, z, y)
	got, err := Merge([]File{both}, Options{BetaAuto: true})
	if err != nil {
		t.Fatal(err)
	}
	want, err := Merge([]File{bOnly}, Options{BetaAuto: true})
	if err != nil {
		t.Fatal(err)
	}
	if names := got.Components.TaskNames(); len(names) != 2 {
		t.Errorf("tasks %v, want a and b", names)
	}
	if len(got.Candidates) != len(want.Candidates) || got.Chosen != want.Chosen {
		t.Fatalf("%d candidates, chosen %d; b alone: %d, %d", len(got.Candidates), got.Chosen, len(want.Candidates), want.Chosen)
	}
	for i, c := range got.Candidates {
		if w := want.Candidates[i]; c.Score != w.Score || c.OneHot != w.OneHot {
			t.Errorf("β %v %v: score %v, one-hot %v; b alone: %v, %v", c.Beta, c.Normalization, c.Score, c.OneHot, w.Score, w.OneHot)
		}
	}
	aOnly := liveFile(t, "r", w0, map[string][]int{"a": span(0, 60)}, z, y)
	aOnly.Tasks[0].Held = both.Tasks[0].Held
	if _, err := Merge([]File{aOnly}, Options{BetaAuto: true}); err == nil || !strings.Contains(err.Error(), "no live task has held-out samples") {
		t.Errorf("every row held out, no other task: %v", err)
	}
}

// TestRefuses checks that every problem of the inputs is reported at once.
func TestRefuses(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	z, y := map[string][]float64{}, map[string][]float64{}
	z["a"], y["a"] = data(rng, 20)
	z["b"], y["b"] = data(rng, 20)
	w := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	good := liveFile(t, "r0", w, map[string][]int{"a": span(0, 10)}, z, y)
	same := good // the same window twice
	beta := liveFile(t, "r1", w, map[string][]int{"a": span(10, 20)}, z, y)
	beta.Beta = 2
	expert := liveFile(t, "r2", w, map[string][]int{"a": span(10, 20)}, z, y)
	expert.Tasks[0].Expert.Version = "7"
	bb := liveFile(t, "r3", w, map[string][]int{"b": span(0, 20)}, z, y)
	bb.Backbone.Version = "2"
	base := &react.Components{D: d + 1, Beta: 1, Normalization: react.NormSum, Backbone: backbone}

	_, err := Merge([]File{good, same, beta, expert, bb}, Options{Base: base})
	var l problem.List
	if !errors.As(err, &l) {
		t.Fatalf("err = %v, want a problem.List", err)
	}
	for _, want := range []string{
		"the same file twice",
		"β 2 and normalisation sum",
		`task a: expert "expert_a" version "7"`,
		`backbone "merged" version "2"`,
		"--base: D=5, but the live files have D=4",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
	if len(l) != 5 {
		t.Errorf("%d problems, want 5:\n%v", len(l), err)
	}

	// Load: a shard or checkpoint, and a file that does not load, together.
	shard := filepath.Join(t.TempDir(), "shard.safetensors")
	sf := *good.File
	sf.Replica, sf.Shard = "", "0/2"
	if err := partialfile.Save(shard, &sf); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(t.TempDir(), "broken.safetensors")
	if err := os.WriteFile(broken, []byte("not a file"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load([]string{good.Path, shard, broken})
	if !errors.As(err, &l) || len(l) != 2 || !strings.Contains(err.Error(), "not a live file") {
		t.Errorf("Load: %v", err)
	}
}
