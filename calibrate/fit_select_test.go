package calibrate

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/calibrate/fit"
	"github.com/mergectl/react-triton/calibrate/pairs"
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/componentsfile"
)

// rowsOf returns the rows of m at idx (in), or the others.
func rowsOf(m *mat.Dense, idx []int, in bool) *mat.Dense {
	n, d := m.Dims()
	var data []float64
	for i := range n {
		if slices.Contains(idx, i) == in {
			data = append(data, m.RawRowView(i)...)
		}
	}
	return mat.NewDense(len(data)/d, d, data)
}

func TestFitBetaAuto(t *testing.T) {
	const d = 4
	e := writeEmbeddings(t, d, []string{"a", "b"}, []int{40, 25}, []bool{false, false})
	dir := t.TempDir()
	out, rep := filepath.Join(dir, "c.safetensors"), filepath.Join(dir, "beta.json")
	r := mustRun(t, "fit", "--embeddings", e.dir, "--out", out, "--beta", "auto", "--beta-report", rep,
		"--seed", "3", "--chunk", "7", "--expert", "a=ea", "--expert", "b=eb")
	if !strings.Contains(r.stdout, "← chosen") {
		t.Errorf("stdout has no choice:\n%s", r.stdout)
	}
	var got fit.BetaReport
	b, err := os.ReadFile(rep)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Held["a"] != 8 || got.Held["b"] != 5 || len(got.Candidates) != 14 {
		t.Fatalf("report: held %v, %d candidates", got.Held, len(got.Candidates))
	}
	c, err := componentsfile.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if c.Beta != got.Chosen.Beta || string(c.Normalization) != got.Chosen.Norm {
		t.Errorf("file β=%g %s, chosen %+v", c.Beta, c.Normalization, got.Chosen)
	}
	// The file holds every sample's statistics, held-out ones included.
	for _, ts := range c.Tasks {
		var s mat.Dense
		s.Mul(e.data[ts.Name][1].T(), e.data[ts.Name][0])
		if n, _ := e.data[ts.Name][0].Dims(); ts.N != int64(n) || !mat.EqualApprox(ts.S, &s, 1e-9) {
			t.Errorf("task %s: N=%d, or S is not every sample's", ts.Name, ts.N)
		}
	}
	// Independent: fit each option on the rows not held out, measure
	// ‖W Z − Y‖² / ‖Y‖² on the held-out rows directly.
	fit := &react.Components{D: d, Normalization: react.NormSum}
	held := map[string][2]*mat.Dense{}
	for _, name := range []string{"a", "b"} {
		mtl, ind := e.data[name][0], e.data[name][1]
		n, _ := mtl.Dims()
		h := pairs.Holdout(n, nil, 0.2, 3)
		acc := react.NewAccumulator(d)
		if err := acc.AddFloat64(rowsOf(mtl, h, false).RawMatrix().Data, rowsOf(ind, h, false).RawMatrix().Data); err != nil {
			t.Fatal(err)
		}
		st, err := acc.Stats(name, react.ModelRef{})
		if err != nil {
			t.Fatal(err)
		}
		fit.Tasks = append(fit.Tasks, st)
		held[name] = [2]*mat.Dense{rowsOf(mtl, h, true), rowsOf(ind, h, true)}
	}
	best := math.Inf(1)
	for _, cand := range got.Candidates {
		s, err := react.NewSolver(fit, react.Options{Beta: cand.Beta, Normalization: react.Normalization(cand.Norm)})
		if err != nil {
			t.Fatal(err)
		}
		oneHot := 0.0
		for _, name := range []string{"a", "b"} {
			p, _ := react.OneHot([]string{"a", "b"}, name)
			w, err := s.Solve(p)
			if err != nil {
				t.Fatal(err)
			}
			var res mat.Dense
			res.Mul(held[name][0], w.T())
			res.Sub(&res, held[name][1])
			oneHot += mat.Norm(&res, 2) * mat.Norm(&res, 2) / (mat.Norm(held[name][1], 2) * mat.Norm(held[name][1], 2)) / 2
		}
		if math.Abs(oneHot-cand.OneHot) > 1e-9 {
			t.Errorf("β=%g %s: one-hot error %g, rows give %g", cand.Beta, cand.Norm, cand.OneHot, oneHot)
		}
		best = min(best, cand.Score)
	}
	if got.Chosen.Score != best {
		t.Errorf("chosen score %g, lowest %g", got.Chosen.Score, best)
	}
}

func TestFitBetaAutoRefuses(t *testing.T) {
	e := writeEmbeddings(t, 3, []string{"a"}, []int{10}, []bool{false})
	out := filepath.Join(t.TempDir(), "c.safetensors")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--beta", "auto", "--shard", "0/2"}, "beta_select.auto: excludes shard"},
		{[]string{"--beta-report", "x.json"}, "beta_select.report: needs beta_select.auto"},
		{[]string{"--beta", "auto", "--holdout", "1"}, "beta_select.holdout: must be in (0, 1)"},
		{[]string{"--beta", "many"}, `"many": want a number or auto`},
	} {
		r := run(t, append([]string{"fit", "--embeddings", e.dir, "--out", out}, c.args...)...)
		if r.code == 0 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, r.code, r.stderr, c.want)
		}
	}
}
