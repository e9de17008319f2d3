package evaluate

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/evaluate/metrics"
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/triton"
)

// linearModels is an in-process Models: every model is a linear map of one
// input vector, y = M x, computed in float64 and returned in float32.
type linearModels struct {
	maps  map[string]*mat.Dense
	mu    sync.Mutex
	calls map[string]int // samples run per model
}

func (l *linearModels) Run(_ context.Context, m react.ModelRef, in Samples) ([]float32, int, error) {
	x, shape, err := floatsOf(in)
	if err != nil {
		return nil, 0, err
	}
	w, ok := l.maps[m.Name]
	if !ok {
		return nil, 0, fmt.Errorf("no model %q", m.Name)
	}
	r, c := w.Dims()
	if len(shape) != 1 || int(shape[0]) != c {
		return nil, 0, fmt.Errorf("model %q takes %d values, got shape %v", m.Name, c, shape)
	}
	n := len(x) / c
	l.mu.Lock()
	l.calls[m.Name] += n
	l.mu.Unlock()
	out := make([]float32, 0, n*r)
	for i := range n {
		for _, v := range apply(w, widen(x[i*c:(i+1)*c])) {
			out = append(out, float32(v))
		}
	}
	return out, r, nil
}

// floatsOf reads every sample of in, one float32 tensor, as the fakes
// take them.
func floatsOf(in Samples) ([]float32, []int64, error) {
	specs := in.Specs()
	if len(specs) != 1 || specs[0].Datatype != triton.FP32 {
		return nil, nil, fmt.Errorf("samples %+v: want one FP32 tensor", specs)
	}
	raw, err := in.Read(span(0, in.Rows()))
	if err != nil {
		return nil, nil, err
	}
	x, err := triton.DecodeFloat32(nil, triton.FP32, raw[0])
	return x, specs[0].Shape, err
}

func widen(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

func apply(w mat.Matrix, x []float64) []float64 {
	r, _ := w.Dims()
	y := mat.NewVecDense(r, nil)
	y.MulVec(w, mat.NewVecDense(len(x), x))
	return y.RawVector().Data
}

func randDense(rng *rand.Rand, r, c int, scale float64) *mat.Dense {
	m := mat.NewDense(r, c, nil)
	for i := range r {
		for j := range c {
			m.Set(i, j, scale*rng.NormFloat64())
		}
	}
	return m
}

func argmax(v []float64) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

// fixture is a two-task evaluation over linear models: a backbone that is
// a perturbed identity, experts that are other perturbations, and heads
// whose labels are the expert's prediction with some flipped.
type fixture struct {
	models *linearModels
	cfg    *Config
	comps  *react.Components
}

const fixD, fixClasses, fixN = 4, 3, 60

func newFixture(t *testing.T) *fixture {
	rng := rand.New(rand.NewPCG(1, 2))
	tasks := []string{"a", "b"}
	lm := &linearModels{maps: map[string]*mat.Dense{}, calls: map[string]int{}}
	eye := mat.NewDense(fixD, fixD, nil)
	for i := range fixD {
		eye.Set(i, i, 1)
	}
	backbone := randDense(rng, fixD, fixD, 0.4)
	backbone.Add(backbone, eye)
	lm.maps["merged"] = backbone
	c := &react.Components{D: fixD, Beta: 0.1, Normalization: react.NormSum, Backbone: react.ModelRef{Name: "merged"}}
	f := &fixture{models: lm, comps: c, cfg: &Config{Heads: map[string]react.ModelRef{}}}
	for _, task := range tasks {
		expert := randDense(rng, fixD, fixD, 0.4)
		expert.Add(expert, eye)
		lm.maps["expert_"+task] = expert
		lm.maps["head_"+task] = randDense(rng, fixClasses, fixD, 1)
		f.cfg.Heads[task] = react.ModelRef{Name: "head_" + task}
		// Calibration: the statistics of other inputs.
		acc := react.NewAccumulator(fixD)
		for range 200 {
			x := randDense(rng, fixD, 1, 1).RawMatrix().Data
			if err := acc.AddFloat64(apply(backbone, x), apply(expert, x)); err != nil {
				t.Fatal(err)
			}
		}
		st, err := acc.Stats(task, react.ModelRef{Name: "expert_" + task})
		if err != nil {
			t.Fatal(err)
		}
		c.Tasks = append(c.Tasks, st)
		// Evaluation data: labels are the expert's predictions, a fifth flipped.
		in := &Floats{Shape: []int64{fixD}}
		tk := &Task{Name: task, Samples: in}
		for i := range fixN {
			x := randDense(rng, fixD, 1, 1).RawMatrix().Data
			y := int64(argmax(apply(lm.maps["head_"+task], apply(expert, x))))
			if i%5 == 0 {
				y = (y + 1) % fixClasses
			}
			for _, v := range x {
				in.X = append(in.X, float32(v))
			}
			tk.Labels = append(tk.Labels, y)
		}
		f.cfg.Tasks = append(f.cfg.Tasks, tk)
	}
	return f
}

// accuracyOf is the reference: features z of task i through W (nil: none)
// and the head, all in float64 from the float32 inputs.
func (f *fixture) accuracyOf(i int, model string, w *mat.Dense) float64 {
	tk := f.cfg.Tasks[i]
	right := 0
	for k := range tk.N() {
		z := apply(f.models.maps[model], widen(tk.Samples.(*Floats).X[k*fixD:(k+1)*fixD]))
		if w != nil {
			z = apply(w, z)
		}
		if int64(argmax(apply(f.models.maps["head_"+tk.Name], z))) == tk.Labels[k] {
			right++
		}
	}
	return float64(right) / float64(tk.N())
}

// wp is the reference W_p = (Σ p_t A_t)(Σ p_t C_t)⁻¹ in float64, solved by
// LU (not the package's Cholesky).
func wp(c *react.Components, p []float64, beta float64) *mat.Dense {
	a, cp := mat.NewDense(c.D, c.D, nil), mat.NewDense(c.D, c.D, nil)
	for t, st := range c.Tasks {
		var at, ct mat.Dense
		at.Scale(beta, st.WOrth)
		at.Add(&at, st.S)
		ct.CloneFrom(st.G)
		for i := range c.D {
			ct.Set(i, i, ct.At(i, i)+beta)
		}
		at.Scale(p[t], &at)
		ct.Scale(p[t], &ct)
		a.Add(a, &at)
		cp.Add(cp, &ct)
	}
	// W C = A  ⇔  Cᵀ Wᵀ = Aᵀ.
	var wt mat.Dense
	if err := wt.Solve(cp.T(), a.T()); err != nil {
		panic(err)
	}
	return mat.DenseCopyOf(wt.T())
}

func TestRunAgainstReference(t *testing.T) {
	f := newFixture(t)
	tasks := f.cfg.TaskNames()
	for _, spec := range []string{"equal", "one-hot", "pairwise:a,b:5"} {
		s, err := ParseSet(spec, tasks)
		if err != nil {
			t.Fatal(err)
		}
		f.cfg.Sets = append(f.cfg.Sets, s)
	}
	// Two labels on one backbone model: its features are extracted once.
	f.cfg.Backbones = []Backbone{{"X", f.comps}, {"Y", f.comps}}
	f.cfg.Betas = []float64{0.1, 5}
	steps := 0
	f.cfg.Progress = func(done, total int) {
		steps++
		if done != steps || done > total {
			t.Errorf("progress %d/%d after %d steps", done, total, steps)
		}
	}
	res, err := Run(context.Background(), f.models, f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if steps != 1+2*2 {
		t.Errorf("%d progress steps, want 5", steps)
	}
	for _, name := range []string{"merged", "expert_a", "expert_b"} {
		want := fixN
		if name == "merged" {
			want = 2 * fixN
		}
		if got := f.models.calls[name]; got != want {
			t.Errorf("model %s ran on %d samples, want %d (once per task)", name, got, want)
		}
	}
	ind := []float64{f.accuracyOf(0, "expert_a", nil), f.accuracyOf(1, "expert_b", nil)}
	checked := 0
	for _, r := range res.Rows {
		var want []float64
		switch r.Method {
		case MethodIndividual:
			want = ind
		case MethodMerged:
			want = []float64{f.accuracyOf(0, "merged", nil), f.accuracyOf(1, "merged", nil)}
		case AggReACT:
			if r.Label == LabelOwnOneHot {
				continue
			}
			w := wp(f.comps, r.Preference, *r.Beta)
			want = []float64{f.accuracyOf(0, "merged", w), f.accuracyOf(1, "merged", w)}
			if math.Abs(*r.Weighted-(r.Preference[0]*r.Accuracy[0]+r.Preference[1]*r.Accuracy[1])) > 1e-15 {
				t.Errorf("%s: weighted %v", r.Label, *r.Weighted)
			}
		}
		for i := range want {
			if math.Abs(r.Accuracy[i]-want[i]) > 1e-15 || math.Abs(r.Normalized[i]-want[i]/ind[i]) > 1e-15 {
				t.Errorf("%s %s %s: accuracy %v normalised %v, want %v", r.Backbone, r.Method, r.Label, r.Accuracy, r.Normalized, want)
			}
		}
		checked++
	}
	// individual, 2 × (merged + 2 β × (1 + 2 + 5 points)).
	if checked != 1+2*(1+2*8) {
		t.Errorf("checked %d rows", checked)
	}
	// The summaries against the metrics on the rows.
	for _, s := range res.Summaries {
		var pts, ptsK [][]float64
		var us []float64
		for _, r := range res.Rows {
			if r.Backbone != s.Backbone || r.Method != s.Method || r.Set != s.Set || r.Label == LabelOwnOneHot ||
				(s.Beta != nil && *r.Beta != *s.Beta) || r.Method == MethodMerged {
				continue
			}
			pts = append(pts, r.Normalized)
			ptsK = append(ptsK, r.Normalized[:len(s.Focus)])
			if r.Preference[0] > 0 && r.Preference[1] > 0 {
				u, _ := metrics.Uniformity(r.Normalized, r.Preference)
				us = append(us, u)
			}
		}
		if s.Method == MethodMerged {
			continue
		}
		hv, _ := metrics.Hypervolume(pts, []float64{0, 0})
		if len(pts) != s.Points || math.Abs(hv-s.HVT) > 1e-15 || math.Abs(hv-s.HVk) > 1e-15 {
			t.Errorf("%+v: %d points, HV %v", s, len(pts), hv)
		}
		if m := mean(us); (m == nil) != (s.UT == nil) || (m != nil && math.Abs(*m-*s.UT) > 1e-15) {
			t.Errorf("%s %s: U@T %v, want %v", s.Backbone, s.Set, opt(s.UT), opt(m))
		}
	}
	var md strings.Builder
	if err := res.WriteMarkdown(&md); err != nil || !strings.Contains(md.String(), "| ReACT X | β=5 sum | pairwise:a,b:5 | 5 |") {
		t.Errorf("markdown: %v\n%s", err, md.String())
	}
}

func TestRunOracleAndAggregations(t *testing.T) {
	f := newFixture(t)
	s, _ := ParseSet("one-hot", f.cfg.TaskNames())
	f.cfg.Sets = []Set{s}
	f.cfg.Backbones = []Backbone{{"X", f.comps}}
	f.cfg.Aggregations = []string{AggReACT, AggNaive, AggPolar}
	f.cfg.Oracle = true
	res, err := Run(context.Background(), f.models, f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	own := map[string][]float64{}
	for _, r := range res.Rows {
		if r.Label == LabelOwnOneHot {
			own[r.Method] = r.Accuracy
		}
	}
	// At a one-hot preference every aggregation is Ŵ_t.
	for _, m := range []string{AggNaive, AggPolar} {
		if fmt.Sprint(own[m]) != fmt.Sprint(own[AggReACT]) {
			t.Errorf("%s one-hot %v, react %v", m, own[m], own[AggReACT])
		}
	}
	if own[MethodOracle] == nil {
		t.Fatal("no oracle rows")
	}
}

func TestRunErrors(t *testing.T) {
	for _, tc := range []struct {
		edit func(*fixture)
		want string
	}{
		{func(f *fixture) { delete(f.cfg.Heads, "b") }, "task b has no head"},
		{func(f *fixture) { f.cfg.Backbones = nil }, "no components"},
		{func(f *fixture) { f.cfg.Tasks[1].Name = "z" }, "no task z"},
		{func(f *fixture) { f.cfg.Aggregations = []string{"mean"} }, `unknown aggregation "mean"`},
		{func(f *fixture) { f.cfg.Betas = []float64{-1} }, "invalid beta -1"},
		{func(f *fixture) { f.comps.Backbone.Name = "nope" }, `model "nope"`},
		{func(f *fixture) { f.cfg.Backbones = append(f.cfg.Backbones, f.cfg.Backbones[0]) }, `two components labelled "X"`},
	} {
		f := newFixture(t)
		f.cfg.Backbones = []Backbone{{"X", f.comps}}
		f.cfg.Heads["z"] = react.ModelRef{Name: "head_a"}
		tc.edit(f)
		if _, err := Run(context.Background(), f.models, f.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Run = %v, want an error with %q", err, tc.want)
		}
	}
}

// TestRunOracleLinear checks the oracle's LinearFit per task against
// FitLinear (itself checked against QR least squares in linear_test.go) on
// features computed here from the fixture's maps, and its Markdown rows.
// The backbone loses one dimension (a zeroed row), so the map backbone →
// expert is not exact while expert → backbone is: a fit the wrong way
// round, or on the wrong task's expert, gives other numbers.
func TestRunOracleLinear(t *testing.T) {
	f := newFixture(t)
	backbone := f.models.maps["merged"]
	for j := range fixD {
		backbone.Set(fixD-1, j, 0)
	}
	s, _ := ParseSet("equal", f.cfg.TaskNames())
	f.cfg.Sets = []Set{s}
	f.cfg.Backbones = []Backbone{{"X", f.comps}}
	f.cfg.Oracle = true
	res, err := Run(context.Background(), f.models, f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	features := func(model string, tk *Task) []float32 {
		var out []float32
		for k := range tk.N() {
			for _, v := range apply(f.models.maps[model], widen(tk.Samples.(*Floats).X[k*fixD:(k+1)*fixD])) {
				out = append(out, float32(v))
			}
		}
		return out
	}
	var want []LinearFit
	for _, tk := range f.cfg.Tasks {
		z, y := features("merged", tk), features("expert_"+tk.Name, tk)
		in, held, err := FitLinear(z, y, fixD, 0)
		if err != nil {
			t.Fatal(err)
		}
		if back, _, _ := FitLinear(y, z, fixD, 0); !(in < 0.99 && back > 1-1e-6) {
			t.Fatalf("task %s: R² %v backbone → expert, %v the other way: the fixture does not tell them apart", tk.Name, in, back)
		}
		ridged, ridge, err := BestHeldout(z, y, fixD, 0)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, LinearFit{Backbone: "X", Task: tk.Name, Samples: fixN, InSample: in, Heldout: held,
			Ridged: ridged, Ridge: ridge})
	}
	if fmt.Sprint(res.Linear) != fmt.Sprint(want) {
		t.Errorf("Linear = %+v\nwant     %+v", res.Linear, want)
	}
	var md strings.Builder
	if err := res.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, l := range want {
		row := fmt.Sprintf("| X | %s | %d | %.3f | %.3f | %.3f | %g |\n", l.Task, fixN, l.InSample, l.Heldout, l.Ridged, l.Ridge)
		if !strings.Contains(md.String(), row) {
			t.Errorf("no row %q in the Markdown:\n%s", row, md.String())
		}
	}

	// Without the oracle: no fits, and no table.
	f.cfg.Oracle = false
	res, err = Run(context.Background(), f.models, f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	md.Reset()
	if err := res.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if len(res.Linear) != 0 || strings.Contains(md.String(), "R² in-sample") {
		t.Errorf("no oracle, yet Linear = %+v and the Markdown:\n%s", res.Linear, md.String())
	}
}
