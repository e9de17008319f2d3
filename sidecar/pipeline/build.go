package pipeline

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/config"
	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/triton"
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
	Stats *StatsRegistry
}

// Set is the controllable models of one configuration, built and checked.
type Set struct {
	// Models are the controllable models by the name clients call.
	Models map[string]*Model
	// Files maps each components file's path to its SHA-256.
	Files map[string]string
	// Warnings are mismatches worth a log line that do not stop serving,
	// such as a backbone other than the one the components were calibrated
	// on.
	Warnings []string
}

// Problem is one reason a configuration cannot be served.
type Problem struct {
	// Path locates the problem in the configuration, for example
	// "models[1].heads[0].model".
	Path string
	Msg  string
	// Transient problems may go away by themselves: Triton unreachable, a
	// model not loaded or not ready yet.
	Transient bool
}

// BuildError lists every problem Build found.
type BuildError struct {
	Problems []Problem
}

// Error implements error: one "path: message" line per problem.
func (e *BuildError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.Path + ": " + p.Msg
	}
	return strings.Join(lines, "\n")
}

// Transient reports whether every problem is transient, so that trying
// again later may succeed.
func (e *BuildError) Transient() bool {
	for _, p := range e.Problems {
		if !p.Transient {
			return false
		}
	}
	return len(e.Problems) > 0
}

// builder collects the problems of one Build.
type builder struct {
	ctx      context.Context
	cfg      *config.Config
	up       *Upstream
	opt      Options
	problems []Problem
	warnings []string
	// models caches Triton's answers about each model version.
	models map[ref]*tritonModel
	// index is Triton's repository index, read when first needed.
	index *repositoryIndex
}

// tritonModel is what Triton says about one model version.
type tritonModel struct {
	meta *tritonpb.ModelMetadataResponse
	cfg  *tritonpb.ModelConfig
	err  error
	// transient reports whether err may go away by itself, and unreachable
	// whether Triton itself could not be reached.
	transient, unreachable bool
}

func (b *builder) problem(path string, transient bool, format string, args ...any) {
	b.problems = append(b.problems, Problem{Path: path, Msg: fmt.Sprintf(format, args...), Transient: transient})
}

// Build loads the components files of cfg, makes a control.Profile per
// components entry (solving the default, the presets and the arms of the
// experiments of its models), and checks every
// controllable model against the live Triton: the backbone and each head
// are ready, the backbone has the feature output with the components' D in
// FP32, FP16 or BF16, each head takes that feature, each head's task is one
// of the components' tasks, and the outputs exist and do not clash. It
// reports every problem at once, as a *BuildError, and returns a Set only
// when there are none.
func Build(ctx context.Context, cfg *config.Config, up *Upstream, opt Options) (*Set, error) {
	if opt.Cache == nil || opt.Stats == nil {
		return nil, errors.New("pipeline: Build needs a cache and a stats registry")
	}
	b := &builder{ctx: ctx, cfg: cfg, up: up, opt: opt, models: make(map[ref]*tritonModel)}
	set := &Set{Models: make(map[string]*Model), Files: make(map[string]string)}
	profiles := b.profiles(set.Files)
	for i := range cfg.Models {
		if m := b.model(i, profiles); m != nil {
			set.Models[m.name] = m
		}
	}
	if len(b.problems) > 0 {
		return nil, &BuildError{Problems: b.problems}
	}
	set.Warnings = b.warnings
	return set, nil
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
		var fe *control.FieldError
		if b.experimentProblem(components, e) {
			continue
		}
		if errors.As(e, &fe) {
			b.problem(path+"."+fe.Field, false, "%v", fe.Err)
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
	tm := &tritonModel{}
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
		tm.err, tm.transient = fmt.Errorf("%s is not ready on Triton %s", describe(r), b.up.Addr), true
		return tm
	}
	if err == nil {
		tm.meta, err = b.up.RPC.ModelMetadata(ctx, &tritonpb.ModelMetadataRequest{Name: r.model, Version: r.version})
	}
	if err == nil {
		var resp *tritonpb.ModelConfigResponse
		resp, err = b.up.RPC.ModelConfig(ctx, &tritonpb.ModelConfigRequest{Name: r.model, Version: r.version})
		tm.cfg = resp.GetConfig()
	}
	if err != nil {
		code := status.Code(err)
		tm.transient = code == codes.Unavailable || code == codes.NotFound || code == codes.DeadlineExceeded
		tm.unreachable = code == codes.Unavailable || code == codes.DeadlineExceeded
		tm.err = fmt.Errorf("%s on Triton %s: %s", describe(r), b.up.Addr, status.Convert(err).Message())
	}
	return tm
}

// describe names a model version in messages.
func describe(r ref) string {
	if r.version == "" {
		return fmt.Sprintf("model %q", r.model)
	}
	return fmt.Sprintf("model %q version %s", r.model, r.version)
}

// floatTypes are the datatypes a feature may have.
var floatTypes = [...]string{triton.FP32, triton.FP16, triton.BF16}

// model checks the i-th configured model and builds it, or records its
// problems and returns nil.
func (b *builder) model(i int, profiles map[string]*control.Profile) *Model {
	mc := b.cfg.Models[i]
	path := fmt.Sprintf("models[%d]", i)
	before := len(b.problems)
	prof := profiles[mc.Components]
	if prof == nil {
		// The components entry failed; its own problems say why.
		return nil
	}
	m := &Model{
		name:     mc.Name,
		path:     path,
		profile:  prof,
		backbone: ref{mc.Backbone.Model, mc.Backbone.Version},
		feature:  mc.Backbone.Output,
		optional: make(map[string]bool),
		outputs:  make(map[string]output),
		stats:    b.opt.Stats.For(mc.Name),
	}

	// When the backbone fails, the heads are still checked (what can be
	// checked without it), so that every problem shows at once and a
	// permanent one is not hidden behind a transient one.
	bb := b.triton(m.backbone)
	bbOK := bb.err == nil
	if !bbOK {
		b.problem(path+".backbone.model", bb.transient, "%v", bb.err)
		if bb.unreachable {
			return nil // Triton itself is away: nothing more to learn
		}
	}
	if cal := prof.Backbone(); cal.Name != "" && (cal.Name != mc.Backbone.Model || cal.Output != mc.Backbone.Output) {
		b.warnings = append(b.warnings, fmt.Sprintf("%s.backbone: %s output %q, but the components file was calibrated on %q output %q",
			path, describe(m.backbone), m.feature, cal.Name, cal.Output))
	}
	var featureShape []int64
	for _, o := range bb.meta.GetOutputs() {
		if o.GetName() == m.feature {
			m.featureType, featureShape = o.GetDatatype(), o.GetShape()
		}
	}
	switch {
	case !bbOK:
	case featureShape == nil:
		b.problem(path+".backbone.output", false, "%s has no output %q (outputs: %s)", describe(m.backbone), m.feature, names(bb.meta.GetOutputs()))
	case !slices.Contains(floatTypes[:], m.featureType):
		b.problem(path+".backbone.output", false, "%s output %q is %s; a feature must be FP32, FP16 or BF16", describe(m.backbone), m.feature, m.featureType)
	case len(featureShape) == 0 || (featureShape[len(featureShape)-1] != int64(prof.D()) && featureShape[len(featureShape)-1] != -1):
		b.problem(path+".backbone.output", false, "%s output %q has shape %s, but the components file has D=%d (want the last dimension %d)",
			describe(m.backbone), m.feature, triton.FormatShape(featureShape), prof.D(), prof.D())
	}
	m.inputs = bb.meta.GetInputs()
	for _, in := range bb.cfg.GetInput() {
		if in.GetOptional() {
			m.optional[in.GetName()] = true
		}
	}
	m.batching = bb.cfg.GetMaxBatchSize() > 0
	m.maxBatch = int(bb.cfg.GetMaxBatchSize())

	tasks := prof.Tasks()
	var outMeta []*tritonpb.ModelMetadataResponse_TensorMetadata
	var outCfg []*tritonpb.ModelOutput
	for j, hc := range mc.Heads {
		hpath := fmt.Sprintf("%s.heads[%d]", path, j)
		h := head{ref: ref{hc.Model, hc.Version}, task: hc.Task}
		if !slices.Contains(tasks, hc.Task) {
			b.problem(hpath+".task", false, "unknown task %q: the components file %q has tasks %s", hc.Task, mc.Components, strings.Join(tasks, ", "))
		}
		hm := b.triton(h.ref)
		if hm.err != nil {
			b.problem(hpath+".model", hm.transient, "%v", hm.err)
			continue
		}
		// The input that takes the feature.
		ins := hm.meta.GetInputs()
		var in *tritonpb.ModelMetadataResponse_TensorMetadata
		switch {
		case hc.Input != "":
			for _, x := range ins {
				if x.GetName() == hc.Input {
					in = x
				}
			}
			if in == nil {
				b.problem(hpath+".input", false, "%s has no input %q (inputs: %s)", describe(h.ref), hc.Input, names(ins))
				continue
			}
		case len(ins) == 1:
			in = ins[0]
		default:
			b.problem(hpath+".input", false, "%s has %d inputs (%s): name the one that takes the feature", describe(h.ref), len(ins), names(ins))
			continue
		}
		h.input, h.inputType = in.GetName(), in.GetDatatype()
		if !slices.Contains(floatTypes[:], h.inputType) {
			b.problem(hpath+".model", false, "%s input %q is %s; it must be FP32, FP16 or BF16 to take the feature", describe(h.ref), h.input, h.inputType)
		}
		if bbOK && featureShape != nil && !shapesCompatible(featureShape, in.GetShape()) {
			b.problem(hpath+".model", false, "%s input %q has shape %s, which does not take the backbone's %q of shape %s",
				describe(h.ref), h.input, triton.FormatShape(in.GetShape()), m.feature, triton.FormatShape(featureShape))
		}
		for _, other := range ins {
			if other != in && !isOptional(hm.cfg, other.GetName()) {
				b.problem(hpath+".model", false, "%s needs input %q besides the feature; a head may only need the feature", describe(h.ref), other.GetName())
			}
		}
		if headBatching := hm.cfg.GetMaxBatchSize() > 0; !bbOK {
			// The batching rule needs the backbone's configuration.
		} else if headBatching != m.batching {
			b.problem(hpath+".model", false, "%s has max_batch_size %d and the backbone %d: both must batch or neither",
				describe(h.ref), hm.cfg.GetMaxBatchSize(), bb.cfg.GetMaxBatchSize())
		} else if m.batching && int(hm.cfg.GetMaxBatchSize()) < m.maxBatch {
			m.maxBatch = int(hm.cfg.GetMaxBatchSize())
		}
		// The outputs, renamed.
		metaByName := make(map[string]*tritonpb.ModelMetadataResponse_TensorMetadata)
		for _, o := range hm.meta.GetOutputs() {
			metaByName[o.GetName()] = o
		}
		cfgByName := make(map[string]*tritonpb.ModelOutput)
		for _, o := range hm.cfg.GetOutput() {
			cfgByName[o.GetName()] = o
		}
		var mapping []outputName
		if len(hc.Outputs) == 0 {
			for _, o := range hm.meta.GetOutputs() {
				mapping = append(mapping, outputName{head: o.GetName(), client: o.GetName()})
			}
		} else {
			for _, k := range sortedKeys(hc.Outputs) {
				if metaByName[k] == nil {
					b.problem(fmt.Sprintf("%s.outputs.%s", hpath, k), false, "%s has no output %q (outputs: %s)", describe(h.ref), k, names(hm.meta.GetOutputs()))
					continue
				}
				mapping = append(mapping, outputName{head: k, client: hc.Outputs[k]})
			}
		}
		for _, on := range mapping {
			if _, dup := m.outputs[on.client]; dup {
				b.problem(hpath+".outputs", false, "output %q is also returned by another head of %q: rename one with outputs: {%s: NEW_NAME}", on.client, mc.Name, on.head)
				continue
			}
			m.outputs[on.client] = output{head: len(m.heads), name: on.head}
			m.order = append(m.order, on.client)
			om := metaByName[on.head]
			outMeta = append(outMeta, &tritonpb.ModelMetadataResponse_TensorMetadata{Name: on.client, Datatype: om.GetDatatype(), Shape: om.GetShape()})
			oc := &tritonpb.ModelOutput{Name: on.client, DataType: triton.DatatypeToConfig(om.GetDatatype())}
			if c := cfgByName[on.head]; c != nil {
				oc.DataType, oc.Dims, oc.LabelFilename = c.GetDataType(), c.GetDims(), c.GetLabelFilename()
			}
			outCfg = append(outCfg, oc)
		}
		h.outputs = mapping
		m.heads = append(m.heads, h)
	}
	if limit := b.cfg.Limits.MaxBatchSize; m.batching && limit > 0 && limit < m.maxBatch {
		m.maxBatch = limit
	}
	if len(b.problems) > before {
		return nil
	}
	m.setExperiment(b.cfg)
	m.metadata = &tritonpb.ModelMetadataResponse{
		Name:     m.name,
		Versions: []string{Version},
		Platform: Platform,
		Inputs:   m.inputs,
		Outputs:  outMeta,
	}
	m.config = &tritonpb.ModelConfig{
		Name:         m.name,
		Platform:     Platform,
		Backend:      Platform,
		MaxBatchSize: int32(m.maxBatch),
		Input:        bb.cfg.GetInput(),
		Output:       outCfg,
		Parameters:   m.configParameters(mc, b.cfg),
	}
	return m
}

// configParameters describe, in the model's configuration, what the
// controllable model runs.
func (m *Model) configParameters(mc config.Model, cfg *config.Config) map[string]*tritonpb.ModelParameter {
	heads := make([]string, len(m.heads))
	for i, h := range m.heads {
		heads[i] = h.task + "=" + h.model
	}
	// The file's name, not its path: the configuration is served to any
	// client, and the host's directories are none of its business.
	comps := ""
	for _, c := range cfg.Components {
		if c.Name == mc.Components {
			comps = filepath.Base(c.Path)
		}
	}
	param := func(s string) *tritonpb.ModelParameter { return &tritonpb.ModelParameter{StringValue: s} }
	return map[string]*tritonpb.ModelParameter{
		"react.backbone":           param(m.backbone.model + ":" + m.feature),
		"react.heads":              param(strings.Join(heads, ",")),
		"react.components":         param(comps),
		"react.default_preference": param(m.profile.Default().Canonical()),
		"react.presets":            param(strings.Join(m.profile.Presets(), ",")),
		"react.tasks":              param(strings.Join(m.profile.Tasks(), ",")),
	}
}

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

// names lists tensor names for messages.
func names(ts []*tritonpb.ModelMetadataResponse_TensorMetadata) string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.GetName()
	}
	return strings.Join(out, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
