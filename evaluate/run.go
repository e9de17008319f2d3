package evaluate

import (
	"context"
	"fmt"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/baseline"
)

// evaluation is the state of one Run.
type evaluation struct {
	cfg    *Config
	models Models
	tasks  []string
	res    *Result
	// features of each model (backbone or expert), per task: N×D.
	features map[react.ModelRef][][]float32
	d        int
	done     int
	total    int
	solveDur time.Duration
	corrDur  time.Duration
	corrRows int
}

// Run evaluates cfg with models: each task's expert (Individual), each
// backbone uncorrected (Merged) and, for every aggregation, normalisation
// and β, corrected at every point of every preference set; with
// cfg.Oracle, the oracle too. Features are extracted once per model and
// reused.
func Run(ctx context.Context, models Models, cfg *Config) (*Result, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("evaluate: %w", err)
	}
	e := &evaluation{cfg: cfg, models: models, tasks: cfg.TaskNames(), features: map[react.ModelRef][][]float32{}}
	e.res = &Result{Tasks: e.tasks}
	for _, t := range cfg.Tasks {
		e.res.Samples = append(e.res.Samples, t.N())
	}
	for _, s := range cfg.Sets {
		e.res.Sets = append(e.res.Sets, SetInfo{Name: s.Name, Kind: s.Kind, Focus: s.Focus})
	}
	for _, b := range cfg.Backbones {
		var n int64
		for _, st := range b.Components.Tasks {
			n += st.N
		}
		e.res.Backbones = append(e.res.Backbones, BackboneInfo{Label: b.Label, Model: b.Components.Backbone.Name,
			Samples: n, Beta: b.Components.Beta, Norm: string(b.Components.Normalization)})
	}
	e.total = e.countSteps()
	if err := e.run(ctx); err != nil {
		return nil, fmt.Errorf("evaluate: %w", err)
	}
	return e.res, nil
}

func (e *evaluation) aggregations() []string {
	if len(e.cfg.Aggregations) == 0 {
		return []string{AggReACT}
	}
	return e.cfg.Aggregations
}

// options lists the solver options of a backbone: every normalisation and β
// asked for, or the file's own.
func (e *evaluation) options(c *react.Components) []react.Options {
	norms, betas := e.cfg.Norms, e.cfg.Betas
	if len(norms) == 0 {
		norms = []react.Normalization{c.Normalization}
	}
	if len(betas) == 0 {
		betas = []float64{c.Beta}
	}
	var out []react.Options
	for _, n := range norms {
		for _, b := range betas {
			out = append(out, react.Options{Beta: b, Normalization: n})
		}
	}
	return out
}

func (e *evaluation) countSteps() int {
	n := 1 // features
	n += len(e.cfg.Served)
	for _, b := range e.cfg.Backbones {
		n += len(e.options(b.Components)) * len(e.aggregations())
	}
	if e.cfg.Oracle {
		for _, b := range e.modelsOfBackbones() {
			n += len(e.options(b.Components))
		}
	}
	return n
}

func (e *evaluation) step() {
	e.done++
	if e.cfg.Progress != nil {
		e.cfg.Progress(e.done, e.total)
	}
}

// modelsOfBackbones returns the distinct backbone models, in order, with
// the first backbone that uses each.
func (e *evaluation) modelsOfBackbones() []Backbone {
	var out []Backbone
	seen := map[react.ModelRef]bool{}
	for _, b := range e.cfg.Backbones {
		if !seen[b.Components.Backbone] {
			seen[b.Components.Backbone] = true
			out = append(out, b)
		}
	}
	return out
}

func (e *evaluation) run(ctx context.Context) error {
	start := time.Now()
	// Features: every expert and every backbone model, once.
	first := e.cfg.Backbones[0].Components
	experts := make([]react.ModelRef, len(e.tasks))
	for i, t := range e.tasks {
		st, _ := first.Task(t)
		experts[i] = st.Expert
		if err := e.extract(ctx, st.Expert, i); err != nil {
			return err
		}
	}
	for _, b := range e.modelsOfBackbones() {
		for i := range e.tasks {
			if err := e.extract(ctx, b.Components.Backbone, i); err != nil {
				return err
			}
		}
	}
	e.res.Timings.Features = time.Since(start).Seconds()
	e.step()

	headStart := time.Now()
	// Individual: expert_t → head_t.
	ind := make([]float64, len(e.tasks))
	for i := range e.tasks {
		acc, err := e.accuracies(ctx, i, [][]float32{e.features[experts[i]][i]})
		if err != nil {
			return err
		}
		ind[i] = acc[0]
	}
	e.res.Individual = ind
	e.addRow(Row{Method: MethodIndividual, Label: "expert_t → head_t"}, ind)

	for _, b := range e.cfg.Backbones {
		if err := e.backbone(ctx, b); err != nil {
			return fmt.Errorf("components %s: %w", b.Label, err)
		}
	}
	if e.cfg.Oracle {
		for _, b := range e.modelsOfBackbones() {
			if err := e.oracle(ctx, b, experts); err != nil {
				return fmt.Errorf("oracle of %s: %w", b.Label, err)
			}
		}
	}
	t := &e.res.Timings
	t.Heads = time.Since(headStart).Seconds() - e.solveDur.Seconds() - e.corrDur.Seconds()
	start = time.Now()
	for k := range e.cfg.Served {
		if err := e.served(ctx, &e.cfg.Served[k]); err != nil {
			return err
		}
		e.step()
	}
	t.Served = time.Since(start).Seconds()
	if t.Solves > 0 {
		t.SolveMean = e.solveDur.Seconds() / float64(t.Solves)
	}
	if e.corrRows > 0 {
		t.CorrectPerSample = e.corrDur.Seconds() / float64(e.corrRows)
	}
	e.summarize()
	e.addOwnOneHot()
	return nil
}

// extract computes a model's features of task i, once.
func (e *evaluation) extract(ctx context.Context, m react.ModelRef, i int) error {
	f, ok := e.features[m]
	if !ok {
		f = make([][]float32, len(e.tasks))
		e.features[m] = f
	}
	if f[i] != nil {
		return nil
	}
	t := e.cfg.Tasks[i]
	z, d, err := e.models.Run(ctx, m, t.Samples)
	if err != nil {
		return fmt.Errorf("task %s: features: %w", t.Name, err)
	}
	if e.d == 0 {
		e.d = d
	}
	if d != e.d {
		return fmt.Errorf("task %s: %s gives features of size %d, others %d", t.Name, describeRef(m), d, e.d)
	}
	f[i] = z
	return nil
}

// accuracies runs task i's head on each of several feature matrices (N×D)
// in one batched call and returns the accuracy of each.
func (e *evaluation) accuracies(ctx context.Context, i int, feats [][]float32) ([]float64, error) {
	t := e.cfg.Tasks[i]
	all := make([]float32, 0, len(feats)*t.N()*e.d)
	for _, f := range feats {
		all = append(all, f...)
	}
	logits, classes, err := e.models.Run(ctx, e.cfg.Heads[t.Name], &Floats{X: all, Shape: []int64{int64(e.d)}})
	if err != nil {
		return nil, fmt.Errorf("task %s: head: %w", t.Name, err)
	}
	out := make([]float64, len(feats))
	per := t.N() * classes
	for k := range feats {
		if out[k], err = Accuracy(logits[k*per:(k+1)*per], classes, t.Labels); err != nil {
			return nil, fmt.Errorf("task %s: %w", t.Name, err)
		}
	}
	return out, nil
}

// backbone evaluates one backbone: uncorrected, then every option and
// aggregation at every preference.
func (e *evaluation) backbone(ctx context.Context, b Backbone) error {
	z := e.features[b.Components.Backbone]
	merged := make([]float64, len(e.tasks))
	for i := range e.tasks {
		acc, err := e.accuracies(ctx, i, [][]float32{z[i]})
		if err != nil {
			return err
		}
		merged[i] = acc[0]
	}
	e.addRow(Row{Backbone: b.Label, Method: MethodMerged, Label: "none (no correction)"}, merged)
	for _, opt := range e.options(b.Components) {
		solver, err := react.NewSolver(b.Components, opt)
		if err != nil {
			return err
		}
		for _, agg := range e.aggregations() {
			if err := e.corrected(ctx, b.Label, agg, opt, solver, z); err != nil {
				return fmt.Errorf("%s, β=%g, %s: %w", agg, opt.Beta, opt.Normalization, err)
			}
			e.step()
		}
	}
	return nil
}

// corrected evaluates every preference point with one solver and
// aggregation on the features z of a backbone.
func (e *evaluation) corrected(ctx context.Context, label, method string, opt react.Options, solver *react.Solver, z [][]float32) error {
	type point struct {
		set   *Set
		pos   int
		p     react.Preference
		w     []float32
		cond  float64
		label string
	}
	var points []point
	for s := range e.cfg.Sets {
		set := &e.cfg.Sets[s]
		for k, pt := range set.Points {
			p, err := expand(pt.P, solver.Tasks())
			if err != nil {
				return err
			}
			start := time.Now()
			var w *mat.Dense
			cond := 0.0
			switch method {
			case AggReACT, MethodOracle:
				w = mat.NewDense(solver.D(), solver.D(), nil)
				var st react.SolveStats
				st, err = solver.SolveIntoStats(w, p)
				cond = st.Cond
			case AggNaive:
				w, err = baseline.Naive(solver, p)
			case AggPolar:
				w, err = baseline.Polar(solver, p)
			}
			if err != nil {
				return fmt.Errorf("preference %s: %w", pt.Label, err)
			}
			w32, err := react.Float32Matrix(w)
			if err != nil {
				return err
			}
			e.solveDur += time.Since(start)
			e.res.Timings.Solves++
			points = append(points, point{set, k, pt.P, w32, cond, pt.Label})
		}
	}
	if len(points) == 0 {
		return nil
	}
	acc := make([][]float64, len(points))
	for k := range acc {
		acc[k] = make([]float64, len(e.tasks))
	}
	for i := range e.tasks {
		n := len(z[i]) / e.d
		feats := make([][]float32, len(points))
		start := time.Now()
		for k, pt := range points {
			feats[k] = make([]float32, len(z[i]))
			if err := react.Correct(feats[k], z[i], pt.w, e.d); err != nil {
				return err
			}
		}
		e.corrDur += time.Since(start)
		e.corrRows += n * len(points)
		a, err := e.accuracies(ctx, i, feats)
		if err != nil {
			return err
		}
		for k := range points {
			acc[k][i] = a[k]
		}
	}
	beta := opt.Beta
	for k, pt := range points {
		e.addRow(Row{Backbone: label, Method: method, Beta: &beta, Norm: string(opt.Normalization),
			Set: pt.set.Name, Label: pt.label, Preference: pt.p.Weights(), Cond: pt.cond, SetPosition: pt.pos}, acc[k])
	}
	return nil
}

// expand returns p over the tasks of a solver, which may have more tasks
// than the evaluation (they weigh 0).
func expand(p react.Preference, tasks []string) (react.Preference, error) {
	w := make([]float64, len(tasks))
	for i, t := range tasks {
		w[i] = p.Weight(t)
	}
	return react.NewPreference(tasks, w)
}

// oracle fits ReACT's statistics on the evaluation features themselves
// (backbone → expert, every sample of each task) and evaluates them with
// every β and normalisation evaluated (by default the components'); it
// also measures each task's LinearFit.
func (e *evaluation) oracle(ctx context.Context, b Backbone, experts []react.ModelRef) error {
	z := e.features[b.Components.Backbone]
	c := &react.Components{D: e.d, Beta: b.Components.Beta, Normalization: b.Components.Normalization, Backbone: b.Components.Backbone}
	for i, t := range e.tasks {
		acc := react.NewAccumulator(e.d)
		if err := acc.AddFloat32(z[i], e.features[experts[i]][i]); err != nil {
			return err
		}
		fit, err := measureLinear(z[i], e.features[experts[i]][i], e.d, 0)
		if err != nil {
			return fmt.Errorf("task %q: %w", t, err)
		}
		fit.Backbone, fit.Task = b.Label, t
		e.res.Linear = append(e.res.Linear, fit)
		st, err := acc.Stats(t, experts[i])
		if err != nil {
			return err
		}
		c.Tasks = append(c.Tasks, st)
	}
	for _, opt := range e.options(b.Components) {
		solver, err := react.NewSolver(c, opt)
		if err != nil {
			return err
		}
		if err := e.corrected(ctx, b.Label, MethodOracle, opt, solver, z); err != nil {
			return err
		}
		e.step()
	}
	return nil
}

// addRow completes a row from its accuracies and appends it.
func (e *evaluation) addRow(r Row, acc []float64) {
	r.Accuracy = acc
	r.Normalized = make([]float64, len(acc))
	for i, a := range acc {
		r.Mean += a / float64(len(acc))
		if e.res.Individual[i] > 0 {
			r.Normalized[i] = a / e.res.Individual[i]
		}
		r.NormMean += r.Normalized[i] / float64(len(acc))
	}
	if r.Preference != nil {
		w := 0.0
		for i, p := range r.Preference {
			w += p * acc[i]
		}
		r.Weighted = &w
	}
	e.res.Rows = append(e.res.Rows, r)
}
