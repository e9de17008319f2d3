package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/problem"
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/modelstats"
	"github.com/mergectl/react-triton/sidecar/pipeline/shadowcmp"
	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/modelinfo"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// Upstream is the Triton server the pipeline calls.
type Upstream struct {
	// RPC is a client of Triton's inference service.
	RPC tritonpb.GRPCInferenceServiceClient
	// Addr names the server in messages.
	Addr string
	// Timeout bounds each call whose context has no deadline; 0 means no
	// bound.
	Timeout time.Duration
}

// callCtx applies the upstream timeout to a context without a deadline.
func (u *Upstream) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok || u.Timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, u.Timeout)
}

// Options are what Build shares with the models it builds.
type Options struct {
	// Cache is the W_p cache of per-request preferences. Required.
	Cache *control.Cache
	// Observer is told about W_p lookups and solves; nil observes nothing.
	Observer control.Observer
	// Stats keeps the models' statistics across reloads. Required.
	Stats *modelstats.Registry
	// Shadow counts the shadow comparisons of the experiments that
	// configure one (experiments[].shadow); nil turns them off. One
	// ShadowMetrics serves every Build of a server, across reloads.
	Shadow *ShadowMetrics
}

// Set is the controllable models of one configuration, built and checked.
type Set struct {
	// Models are the controllable models by the name clients call.
	Models map[string]*Model
	// Files maps each components file's path to its SHA-256.
	Files map[string]string

	// shadow is what the models' shadow comparisons share, nil for none.
	shadow *shadowcmp.Run
}

// Model returns the built model of a name, nil for none (or a nil set).
func (s *Set) Model(name string) *Model {
	if s == nil {
		return nil
	}
	return s.Models[name]
}

// builder collects the problems of one Build.
type builder struct {
	ctx      context.Context
	cfg      *config.Config
	up       *Upstream
	opt      Options
	problems problem.List
	// models caches Triton's answers about each model version, and shadows
	// about the models controllable models shadow.
	models, shadows map[ref]*tritonModel
	// index is Triton's repository index, read when first needed.
	index *repositoryIndex
}

// tritonModel is what Triton says about one model version: its metadata
// and configuration, whose inputs and outputs modelinfo.Info's rules
// pick, or why it could not say.
type tritonModel struct {
	modelinfo.Info
	err error
	// transient reports whether err may go away by itself, unreachable
	// whether Triton itself could not be reached, and notFound whether
	// Triton has no such model.
	transient, unreachable, notFound bool
}

func (b *builder) problem(path string, transient bool, format string, args ...any) {
	b.problems = append(b.problems, &problem.Problem{Path: path, Msg: fmt.Sprintf(format, args...), Transient: transient})
}

// Build loads the components files of cfg, makes a control.Profile per
// components entry (solving the default, the presets and the arms of the
// experiments of its models), and checks every controllable model against
// the live Triton.
//
// A model of the explicit form: the backbone and each head are ready, the
// backbone has the feature output with the components' D in FP32, FP16 or
// BF16, each head takes that feature, each head's task is one of the
// components' tasks, the inputs and outputs exist and do not clash, and
// when Triton has a model of the same name, the model's signature is that
// model's (unless the configuration says signature: differs).
//
// A model of the graph form: Triton's model of its name is a ready
// ensemble, whose steps Build reads; the tensor to correct is produced by
// exactly one step and read by at least one, in FP32, FP16 or BF16 with
// the components' D as its last dimension.
//
// In both forms the model corrected (the backbone, or the model of the
// step that produces the tensor) must be the one the components file
// records, or a variant the configuration names (variant_of).
//
// Build reports every problem at once, as a problem.List (whose Transient
// says whether trying again later may succeed), and returns a Set only
// when there are none.
func Build(ctx context.Context, cfg *config.Config, up *Upstream, opt Options) (*Set, error) {
	if opt.Cache == nil || opt.Stats == nil {
		return nil, errors.New("pipeline: Build needs a cache and a stats registry")
	}
	b := &builder{ctx: ctx, cfg: cfg, up: up, opt: opt, models: make(map[ref]*tritonModel), shadows: make(map[ref]*tritonModel)}
	set := &Set{Models: make(map[string]*Model), Files: make(map[string]string)}
	profiles := b.profiles(set.Files)
	for i := range cfg.Models {
		if m := b.model(i, profiles); m != nil {
			set.Models[m.name] = m
		}
	}
	if len(b.problems) > 0 {
		return nil, b.problems
	}
	b.setShadows(set)
	return set, nil
}

// model checks the i-th configured model and builds it, in its form, or
// records its problems and returns nil.
func (b *builder) model(i int, profiles map[string]*control.Profile) *Model {
	mc := b.cfg.Models[i]
	prof := profiles[mc.Components]
	switch {
	case prof == nil:
		// The components entry failed; its own problems say why.
		return nil
	case mc.Graph():
		return b.graphModel(i, prof)
	}
	return b.explicitModel(i, prof)
}

// profiles loads each components file once and builds a profile per
// components entry. An entry that fails has no profile.
func (b *builder) profiles(files map[string]string) map[string]*control.Profile {
	type loaded struct {
		comps *react.Components
		sum   string
		err   error
	}
	byPath := make(map[string]loaded)
	out := make(map[string]*control.Profile)
	experiments := experimentSpecs(b.cfg)
	for i, c := range b.cfg.Components {
		path := fmt.Sprintf("components[%d]", i)
		l, ok := byPath[c.Path]
		if !ok {
			l.comps, l.sum, l.err = control.LoadComponents(c.Path)
			byPath[c.Path] = l
		}
		if l.err != nil {
			b.problem(path+".path", false, "%v", l.err)
			continue
		}
		files[c.Path] = l.sum
		opts := react.DefaultOptions(l.comps)
		if c.Beta != nil {
			opts.Beta = *c.Beta
		}
		if c.Normalize != "" {
			opts.Normalization = react.Normalization(c.Normalize)
		}
		p, err := control.NewProfile(b.ctx, control.ProfileSpec{
			Name:                c.Name,
			Components:          l.comps,
			Checksum:            l.sum,
			Options:             opts,
			Default:             c.DefaultPreference,
			Presets:             c.Presets,
			Experiments:         experiments[c.Name],
			MaxPreferenceLength: b.cfg.Limits.MaxPreferenceLength,
			PresetsOnly:         b.cfg.Admission.PresetsOnly,
			Grid:                b.cfg.Admission.PreferenceGrid,
			Cache:               b.opt.Cache,
			Observer:            b.opt.Observer,
		})
		if err != nil {
			b.profileProblems(path, c.Name, err)
			continue
		}
		out[c.Name] = p
	}
	return out
}

// profileProblems turns NewProfile's error into problems at their paths.
func (b *builder) profileProblems(path, components string, err error) {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	for _, e := range errs {
		var fe *problem.Problem
		if b.experimentProblem(components, e) {
			continue
		}
		if errors.As(e, &fe) {
			b.problem(path+"."+fe.Path, false, "%s", fe.Msg)
		} else {
			b.problem(path, false, "%v", e)
		}
	}
}

// triton returns what Triton says about a model version: ready, with its
// metadata and configuration. Answers are asked once per Build.
func (b *builder) triton(r ref) *tritonModel {
	if tm, ok := b.models[r]; ok {
		return tm
	}
	tm := &tritonModel{Info: modelinfo.Info{Name: r.model, Version: r.version}}
	b.models[r] = tm
	ctx, cancel := b.up.callCtx(b.ctx)
	defer cancel()
	ready, err := b.up.RPC.ModelReady(ctx, &tritonpb.ModelReadyRequest{Name: r.model, Version: r.version})
	if (err == nil && !ready.GetReady()) || status.Code(err) == codes.NotFound {
		if known, ok := b.inRepository(r.model); ok && !known {
			// Not a model Triton has: waiting will not bring it.
			tm.err = fmt.Errorf("%s is not in the model repository of Triton %s", describe(r), b.up.Addr)
			return tm
		}
	}
	if err == nil && !ready.GetReady() {
		tm.err, tm.transient = &triton.NotReadyError{Model: r.model, Version: r.version, Addr: b.up.Addr}, true
		return tm
	}
	if err == nil {
		tm.Metadata, err = b.up.RPC.ModelMetadata(ctx, &tritonpb.ModelMetadataRequest{Name: r.model, Version: r.version})
	}
	if err == nil {
		var resp *tritonpb.ModelConfigResponse
		resp, err = b.up.RPC.ModelConfig(ctx, &tritonpb.ModelConfigRequest{Name: r.model, Version: r.version})
		tm.Config = resp.GetConfig()
	}
	if err != nil {
		code := status.Code(err)
		tm.transient = code == codes.Unavailable || code == codes.NotFound || code == codes.DeadlineExceeded
		tm.unreachable = code == codes.Unavailable || code == codes.DeadlineExceeded
		tm.notFound = code == codes.NotFound
		tm.err = fmt.Errorf("%s on Triton %s: %s", describe(r), b.up.Addr, status.Convert(err).Message())
	}
	return tm
}

// shadow returns what Triton says about the model of a controllable
// model's name (its default version): its metadata and configuration, or
// nil when Triton has no model of that name. Unlike triton, it does not
// ask whether the model is ready: Triton answers a name it does not know
// "not ready" too.
func (b *builder) shadow(name string) (*tritonModel, *tritonModel) {
	r := ref{model: name}
	if tm, ok := b.shadows[r]; ok {
		return shadowResult(tm)
	}
	tm := &tritonModel{Info: modelinfo.Info{Name: name}}
	b.shadows[r] = tm
	ctx, cancel := b.up.callCtx(b.ctx)
	defer cancel()
	var err error
	tm.Metadata, err = b.up.RPC.ModelMetadata(ctx, &tritonpb.ModelMetadataRequest{Name: name})
	if err == nil {
		var resp *tritonpb.ModelConfigResponse
		resp, err = b.up.RPC.ModelConfig(ctx, &tritonpb.ModelConfigRequest{Name: name})
		tm.Config = resp.GetConfig()
	}
	if err != nil {
		code := status.Code(err)
		tm.notFound = code == codes.NotFound
		tm.transient = code != codes.InvalidArgument
		tm.err = fmt.Errorf("comparing with Triton's model %q on %s: %s", name, b.up.Addr, status.Convert(err).Message())
	}
	return shadowResult(tm)
}

// shadowResult splits a shadow lookup into the model found (nil for none)
// and the lookup's failure (nil when Triton answered, model or not).
func shadowResult(tm *tritonModel) (found, failed *tritonModel) {
	switch {
	case tm.err == nil:
		return tm, nil
	case tm.notFound:
		return nil, nil
	}
	return nil, tm
}

// describe names a model version in messages (triton.DescribeModel).
func describe(r ref) string { return triton.DescribeModel(r.model, r.version) }

// shapesCompatible reports whether two metadata shapes can describe the
// same tensor: the same rank, and each dimension equal or -1 on either side.
func shapesCompatible(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] && a[i] != -1 && b[i] != -1 {
			return false
		}
	}
	return true
}

func isOptional(cfg *tritonpb.ModelConfig, input string) bool {
	for _, in := range cfg.GetInput() {
		if in.GetName() == input {
			return in.GetOptional()
		}
	}
	return false
}
