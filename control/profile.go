package control

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/internal/threadprio"
	"github.com/mergectl/react-triton/problem"
	"github.com/mergectl/react-triton/react"
)

// ProfileSpec is what a Profile is built from.
type ProfileSpec struct {
	// Name names the profile in errors and metrics (the configuration's
	// components entry).
	Name string
	// Components are the loaded statistics, and Checksum the SHA-256 of the
	// file they came from (part of every cache key).
	Components *react.Components
	Checksum   string
	// Options are β and the normalisation in use.
	Options react.Options
	// Default is the default preference spec; "" or None applies no
	// correction when a request names none.
	Default string
	// Presets maps names to preference specs.
	Presets map[string]string
	// Experiments are the experiments of the models that use the profile;
	// each arm's W_p is solved and pinned with the default's and the
	// presets'.
	Experiments []ExperimentSpec
	// MaxPreferenceLength bounds a request's preference or preset value,
	// in bytes; 0 means no bound.
	MaxPreferenceLength int
	// PresetsOnly refuses the preferences of requests that would need a
	// solve: only the pinned ones (the default, the presets, the arms) and
	// no correction are served.
	PresetsOnly bool
	// Grid, when positive, rounds the preferences of requests to multiples
	// of 1/Grid (react.Preference.RoundedTo), unless they are pinned as
	// they are.
	Grid int
	// Cache holds the W_p of per-request preferences; it may be shared by
	// several profiles. Required.
	Cache *Cache
	// Observer is told about lookups and solves; nil observes nothing.
	Observer Observer
}

// Profile resolves preferences over one components file and hands out
// their W_p. It is immutable and safe for concurrent use; a reload builds a
// new one.
type Profile struct {
	name        string
	tasks       []string
	d           int
	backbone    react.ModelRef
	key         Key // Components, Beta and Normalization set; Preference per request
	solver      *react.Solver
	device      react.DeviceSolver // the statistics on the device in use, or nil
	def         Choice
	presets     map[string]Choice
	presetNames []string
	pinned      map[string]*Matrix // by Choice.Key: the default's, the presets' and the arms'
	experiments map[string]*Experiment
	maxLen      int
	presetsOnly bool
	grid        int
	cache       *Cache
	part        *partition // the cache's partition of key
	obs         Observer
	specs       specMemo // the parses of the specs requests sent
}

// NewProfile builds a profile: it makes the solver, parses the default and
// the presets against the components' tasks, resolves the experiments' arms,
// and solves each of their W_p, which stay pinned for the profile's life.
// It reports every problem with the default, the presets and the
// experiments at once, joined by errors.Join: a *problem.Problem at path
// "default_preference" or "presets.<name>" (as problem.Key writes it), or
// an *ExperimentError. A Profile is either complete or not returned.
func NewProfile(ctx context.Context, spec ProfileSpec) (*Profile, error) {
	if spec.Cache == nil {
		return nil, errors.New("profile: no cache")
	}
	solver, err := react.NewSolver(spec.Components, spec.Options)
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", spec.Name, err)
	}
	p := &Profile{
		name:        spec.Name,
		tasks:       solver.Tasks(),
		d:           solver.D(),
		backbone:    spec.Components.Backbone,
		key:         Key{Components: spec.Checksum, Beta: spec.Options.Beta, Normalization: spec.Options.Normalization},
		solver:      solver,
		presets:     make(map[string]Choice, len(spec.Presets)),
		pinned:      make(map[string]*Matrix),
		experiments: make(map[string]*Experiment, len(spec.Experiments)),
		maxLen:      spec.MaxPreferenceLength,
		presetsOnly: spec.PresetsOnly,
		grid:        spec.Grid,
		cache:       spec.Cache,
		obs:         spec.Observer,
	}
	p.part = spec.Cache.partition(p.key.part(), spec.Name)
	if p.obs == nil {
		p.obs = nopObserver{}
	}
	p.presetNames = sortedNames(spec.Presets)
	if acc := react.CurrentAccelerator(); acc != nil {
		if p.device, err = acc.Load(solver); err != nil {
			return nil, fmt.Errorf("profile %s: %w", spec.Name, err)
		}
	} else {
		// A profile solves many preferences: the bound of each C_p's
		// condition, proved once here, spares each solve the estimate
		// (the device solver proves its own when it loads).
		solver.ProveConditionBound()
	}

	var errs []error
	pinSpec := func(spec string) (Choice, error) {
		c, err := p.parseSpec(spec)
		if err != nil {
			return Choice{}, err
		}
		if !c.Corrects() || p.pinned[c.Key] != nil {
			return c, nil
		}
		if err := ctx.Err(); err != nil {
			return c, err
		}
		m, err := p.solve(c)
		if err != nil {
			return c, err
		}
		p.pinned[c.Key] = m
		return c, nil
	}
	pin := func(field, spec string) Choice {
		c, err := pinSpec(spec)
		if err != nil {
			errs = append(errs, problem.New(field, "%v", err))
		}
		return c
	}
	if spec.Default != "" {
		p.def = pin("default_preference", spec.Default)
	}
	p.def.Source = SourceDefault
	for _, name := range p.presetNames {
		c := pin(problem.Key("presets", name), spec.Presets[name])
		c.Source, c.Preset = SourcePreset, name
		p.presets[name] = c
	}
	for _, es := range spec.Experiments {
		e, eerrs := p.newExperiment(es, pinSpec)
		errs = append(errs, eerrs...)
		if e != nil {
			p.experiments[es.Name] = e
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return p, nil
}

// Name returns the profile's name.
func (p *Profile) Name() string { return p.name }

// Tasks returns the task names in the components' order.
func (p *Profile) Tasks() []string { return append([]string(nil), p.tasks...) }

// D returns the feature dimension.
func (p *Profile) D() int { return p.d }

// Backbone returns the backbone model and output the components were
// calibrated on.
func (p *Profile) Backbone() react.ModelRef { return p.backbone }

// Default returns the default choice.
func (p *Profile) Default() Choice { return p.def }

// Presets returns the preset names, sorted.
func (p *Profile) Presets() []string { return append([]string(nil), p.presetNames...) }

// Matrix returns the W_p of a choice, nil for a choice that applies no
// correction. The default's and the presets' are pinned, formed; others
// come from the cache, in the partition of the profile's components file,
// β and normalisation. On a miss the preference is only factorised (the
// weighted sums and the Cholesky factorisation of C_p, about D³/3 flops),
// which answers the request at once through the factored form; W_p itself
// (about 2D³ more) is formed in the
// background, one at a time, and the matrix switches to it, dropping the
// factorisation: at once when no other new preference waits for a solve,
// no rate of solves is set and the solvers' share of time is not spent
// (Cache.idle), otherwise when the preference is used again. So a preference used once
// in a flood of new ones costs one factorisation and no formation. A preference whose C_p cannot
// be factorised reliably gives a *react.SolveError; a solve the cache will
// not start now, an *OverloadError. See Cache.Get for ctx: when every
// request that waits for a solve has gone, the solve is cancelled.
func (p *Profile) Matrix(ctx context.Context, c Choice) (*Matrix, error) {
	if !c.Corrects() {
		return nil, nil
	}
	if m, ok := p.pinned[c.Key]; ok {
		p.obs.Lookup(p.name, LookupPinned)
		return m, nil
	}
	if m := p.cache.cached(p.part, c.Key); m != nil {
		// The common case, first: no closure to allocate.
		p.obs.Lookup(p.name, LookupHit)
		if !m.Formed() {
			p.formLater(m)
		}
		return m, nil
	}
	miss := p.factor
	if p.device != nil {
		miss = p.solve
	}
	m, hit, err := p.cache.get(ctx, p.part, c.Key, func(ctx context.Context) (*Matrix, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return miss(c)
	})
	switch {
	case hit:
		p.obs.Lookup(p.name, LookupHit)
		if !m.Formed() {
			p.formLater(m)
		}
	case err == nil:
		p.obs.Lookup(p.name, LookupMiss)
		if !m.Formed() && p.cache.idle() {
			p.formLater(m)
		}
	}
	return m, err
}

// factor computes the factored form of a choice's W_p.
func (p *Profile) factor(c Choice) (*Matrix, error) {
	start := time.Now()
	f, err := p.solver.Factor(c.Preference)
	p.obs.Solved(p.name, time.Since(start), err)
	if err != nil {
		return nil, err
	}
	return newFactored(c.Key, p.d, f.Stats(), f), nil
}

// formLater forms the W_p of a factored matrix in the background, when no
// other formation is under way (a later request for it tries again),
// switches the matrix to it, and accounts for its smaller size.
func (p *Profile) formLater(m *Matrix) {
	select {
	case p.cache.forming <- struct{}{}:
	default:
		return
	}
	f := m.factor.Load()
	if f == nil {
		<-p.cache.forming
		return // formed meanwhile
	}
	go func() {
		defer func() { <-p.cache.forming }()
		threadprio.Lower(solveNiceness) // the thread goes with this goroutine
		clock := p.cache.clock()
		start := clock()
		w, err := react.Float32Matrix(f.Form())
		took := clock().Sub(start)
		p.cache.paid(took)
		p.obs.Formed(p.name, took, err)
		if err != nil {
			return // the factored form keeps answering
		}
		m.setFormed(w)
		p.cache.resized(p.part, m.Key)
	}()
}

// solve computes the formed W_p of a choice as a float32 Matrix, on the
// device when there is one.
func (p *Profile) solve(c Choice) (*Matrix, error) {
	if p.device != nil {
		return p.solveOnDevice(c)
	}
	start := time.Now()
	dst := mat.NewDense(p.d, p.d, nil)
	st, err := p.solver.SolveIntoStats(dst, c.Preference)
	var w []float32
	if err == nil {
		w, err = react.Float32Matrix(dst)
	}
	p.obs.Solved(p.name, time.Since(start), err)
	if err != nil {
		return nil, err
	}
	return &Matrix{Key: c.Key, D: p.d, W: w, Cond: st.Cond, CondBounded: st.Bounded}, nil
}

// solveOnDevice computes W_p on the device, where it stays for the
// correction, with its host copy as W.
func (p *Profile) solveOnDevice(c Choice) (*Matrix, error) {
	start := time.Now()
	dm, st, err := p.device.Solve(c.Preference)
	p.obs.Solved(p.name, time.Since(start), err)
	if err != nil {
		return nil, err
	}
	return &Matrix{Key: c.Key, D: p.d, Cond: st.Cond, CondBounded: st.Bounded, device: dm}, nil
}
