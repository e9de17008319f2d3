package pipeline

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// explicitModel checks the i-th configured model, of the explicit form
// (backbone and heads), and builds it, or records its problems and returns
// nil.
func (b *builder) explicitModel(i int, prof *control.Profile) *Model {
	mc := b.cfg.Models[i]
	path := fmt.Sprintf("models[%d]", i)
	before := len(b.problems)
	e := &explicit{b: b, mc: mc, path: path, m: &Model{
		name:     mc.Name,
		path:     path,
		version:  Version,
		profile:  prof,
		backbone: ref{mc.Backbone.Model, mc.Backbone.Version},
		feature:  mc.Backbone.Output,
		optional: make(map[string]bool),
		outputs:  make(map[string]output),
		stats:    b.opt.Stats.For(mc.Name),
	}}
	m := e.m

	// When the backbone fails, the heads are still checked (what can be
	// checked without it), so that every problem shows at once and a
	// permanent one is not hidden behind a transient one.
	e.bb = b.triton(m.backbone)
	if e.bbOK = e.bb.err == nil; !e.bbOK {
		b.problem(path+".backbone.model", e.bb.transient, "%v", e.bb.err)
		if e.bb.unreachable {
			return nil // Triton itself is away: nothing more to learn
		}
	}
	m.calibrated = b.checkCalibration(path+".backbone.model", path, mc, prof, m.backbone, m.feature, e.bb.ServedVersion())
	if e.bbOK {
		e.checkFeature()
	}
	inputs := b.renameInputs(path, mc, m, e.bb)
	m.batching = e.bb.Config.GetMaxBatchSize() > 0
	m.maxBatch = int(e.bb.Config.GetMaxBatchSize())
	for j, hc := range mc.Heads {
		e.addHead(j, hc)
	}
	if limit := b.cfg.Limits.MaxBatchSize; m.batching && limit > 0 && limit < m.maxBatch {
		m.maxBatch = limit
	}
	// A model that shadows one of Triton's must serve its signature, and
	// its metadata names that model's platform, as that model's would;
	// unless the configuration says that the difference is intended.
	shadow, shadowErr := b.shadow(m.name)
	if mc.Signature == config.SignatureDiffers {
		shadow, shadowErr = nil, nil
	}
	if shadowErr != nil {
		b.problem(path+".name", shadowErr.transient, "%v", shadowErr.err)
	}
	if len(b.problems) > before {
		return nil
	}
	m.setExperiment(b.cfg)
	e.describe(shadow, inputs)
	if shadow != nil {
		b.checkSignature(path, m, shadow)
	}
	if len(b.problems) > before {
		return nil
	}
	return m
}

// explicit is the state of one explicit model's build: the model as far
// as it is built, its backbone as Triton describes it, and the outputs the
// heads add to its metadata and configuration.
type explicit struct {
	b    *builder
	mc   config.Model
	path string // the model's path in the configuration, models[i]
	m    *Model

	bb   *tritonModel
	bbOK bool // the backbone was found and described
	// featureShape is the shape of the backbone's feature output, nil
	// when it is unknown or wrong.
	featureShape []int64

	outMeta []*tritonpb.ModelMetadataResponse_TensorMetadata
	outCfg  []*tritonpb.ModelOutput
}

// checkFeature checks the backbone's feature output: its datatype, and a
// last dimension that is the components file's D.
func (e *explicit) checkFeature() {
	m, d := e.m, e.m.profile.D()
	var shape []int64
	out, err := e.bb.Output(m.feature, "")
	if err == nil {
		m.featureType, shape = out.GetDatatype(), out.GetShape()
		e.featureShape = shape
		err = e.bb.CheckFeature("output", out)
	}
	if err == nil && (len(shape) == 0 || (shape[len(shape)-1] != int64(d) && shape[len(shape)-1] != -1)) {
		err = fmt.Errorf("%s output %q has shape %s, but the components file has D=%d (want the last dimension %d)",
			describe(m.backbone), m.feature, triton.FormatShape(shape), d, d)
	}
	if err != nil {
		e.b.problem(e.path+".backbone.output", false, "%v", err)
	}
}

// addHead checks the j-th head of the configuration and, unless Triton
// does not describe it or it has no input for the feature, adds it to the
// model with its outputs.
func (e *explicit) addHead(j int, hc config.Head) {
	hpath := fmt.Sprintf("%s.heads[%d]", e.path, j)
	h := head{ref: ref{hc.Model, hc.Version}, task: hc.Task}
	if tasks := e.m.profile.Tasks(); !slices.Contains(tasks, hc.Task) {
		e.b.problem(hpath+".task", false, "unknown task %q: the components file %q has tasks %s", hc.Task, e.mc.Components, strings.Join(tasks, ", "))
	}
	hm := e.b.triton(h.ref)
	if hm.err != nil {
		e.b.problem(hpath+".model", hm.transient, "%v", hm.err)
		return
	}
	if !e.headInput(hpath, hc, &h, hm) {
		return
	}
	e.checkHeadBatching(hpath, h, hm)
	h.outputs = e.headOutputs(hpath, hc, hm)
	e.m.heads = append(e.m.heads, h)
}

// headInput finds the head's input that takes the feature and checks it:
// its datatype, a shape that takes the backbone's feature, and no other
// input the head needs. It reports false when there is no such input.
func (e *explicit) headInput(hpath string, hc config.Head, h *head, hm *tritonModel) bool {
	in, err := hm.Input(hc.Input)
	if err != nil {
		e.b.problem(hpath+".input", false, "%v", err)
		return false
	}
	h.input, h.inputType = in.GetName(), in.GetDatatype()
	if err := hm.CheckFeature("input", in); err != nil {
		e.b.problem(hpath+".model", false, "%v", err)
	}
	if e.bbOK && e.featureShape != nil && !shapesCompatible(e.featureShape, in.GetShape()) {
		e.b.problem(hpath+".model", false, "%s input %q has shape %s, which does not take the backbone's %q of shape %s",
			describe(h.ref), h.input, triton.FormatShape(in.GetShape()), e.m.feature, triton.FormatShape(e.featureShape))
	}
	for _, other := range hm.Metadata.GetInputs() {
		if other != in && !isOptional(hm.Config, other.GetName()) {
			e.b.problem(hpath+".model", false, "%s needs input %q besides the feature; a head may only need the feature", describe(h.ref), other.GetName())
		}
	}
	return true
}

// checkHeadBatching checks that the head batches if and only if the
// backbone does, and lowers the model's batch size to the head's.
func (e *explicit) checkHeadBatching(hpath string, h head, hm *tritonModel) {
	m := e.m
	headBatching := hm.Config.GetMaxBatchSize() > 0
	switch {
	case !e.bbOK:
		// The batching rule needs the backbone's configuration.
	case headBatching != m.batching:
		e.b.problem(hpath+".model", false, "%s has max_batch_size %d and the backbone %d: both must batch or neither",
			describe(h.ref), hm.Config.GetMaxBatchSize(), e.bb.Config.GetMaxBatchSize())
	case m.batching && int(hm.Config.GetMaxBatchSize()) < m.maxBatch:
		m.maxBatch = int(hm.Config.GetMaxBatchSize())
	}
}

// headOutputs returns the head's outputs under the names the client
// knows (the configuration's outputs map, or every output as it is), and
// adds them to the model's outputs, metadata and configuration; a name
// another head already returns is a problem.
func (e *explicit) headOutputs(hpath string, hc config.Head, hm *tritonModel) []outputName {
	m := e.m
	var mapping []outputName
	if len(hc.Outputs) == 0 {
		for _, o := range hm.Metadata.GetOutputs() {
			mapping = append(mapping, outputName{head: o.GetName(), client: o.GetName()})
		}
	} else {
		for _, k := range slices.Sorted(maps.Keys(hc.Outputs)) {
			if _, err := hm.Output(k, ""); err != nil {
				e.b.problem(fmt.Sprintf("%s.outputs.%s", hpath, k), false, "%v", err)
				continue
			}
			mapping = append(mapping, outputName{head: k, client: hc.Outputs[k]})
		}
	}
	cfgByName := make(map[string]*tritonpb.ModelOutput)
	for _, o := range hm.Config.GetOutput() {
		cfgByName[o.GetName()] = o
	}
	for _, on := range mapping {
		if _, dup := m.outputs[on.client]; dup {
			e.b.problem(hpath+".outputs", false, "output %q is also returned by another head of %q: rename one with outputs: {%s: NEW_NAME}", on.client, e.mc.Name, on.head)
			continue
		}
		m.outputs[on.client] = output{head: len(m.heads), name: on.head}
		m.order = append(m.order, on.client)
		om := triton.FindTensor(hm.Metadata.GetOutputs(), on.head)
		e.outMeta = append(e.outMeta, &tritonpb.ModelMetadataResponse_TensorMetadata{Name: on.client, Datatype: om.GetDatatype(), Shape: om.GetShape()})
		oc := &tritonpb.ModelOutput{Name: on.client, DataType: triton.DatatypeToConfig(om.GetDatatype())}
		if c := cfgByName[on.head]; c != nil {
			oc.DataType, oc.Dims, oc.LabelFilename = c.GetDataType(), c.GetDims(), c.GetLabelFilename()
		}
		e.outCfg = append(e.outCfg, oc)
	}
	return mapping
}

// describe sets the model's metadata and configuration, as the sidecar
// serves them, from its renamed inputs and the heads' outputs.
func (e *explicit) describe(shadow *tritonModel, inputs []*tritonpb.ModelInput) {
	m := e.m
	// The metadata of a model that shadows one of Triton's names that
	// model's platform, as clients know it; the configuration stays the
	// sidecar's own (platform react), since its content is: a client that
	// reads an ensemble's configuration for its steps (perf_analyzer) must
	// not take this one for an ensemble.
	platform := Platform
	if shadow != nil {
		platform = shadow.Metadata.GetPlatform()
	}
	m.metadata = &tritonpb.ModelMetadataResponse{
		Name:     m.name,
		Versions: []string{Version},
		Platform: platform,
		Inputs:   m.inputs,
		Outputs:  e.outMeta,
	}
	m.config = &tritonpb.ModelConfig{
		Name:         m.name,
		Platform:     Platform,
		Backend:      Platform,
		MaxBatchSize: int32(m.maxBatch),
		Input:        inputs,
		Output:       e.outCfg,
		Parameters:   m.configParameters(e.mc, e.b.cfg),
	}
}

// renameInputs sets the model's inputs: the backbone's, under the names
// the configuration's inputs map gives them. It returns the inputs of the
// model's configuration, renamed alike.
func (b *builder) renameInputs(path string, mc config.Model, m *Model, bb *tritonModel) []*tritonpb.ModelInput {
	for _, k := range slices.Sorted(maps.Keys(mc.Inputs)) {
		if _, err := bb.Input(k); bb.err == nil && err != nil {
			b.problem(fmt.Sprintf("%s.inputs.%s", path, k), false, "%v", err)
		}
	}
	served := func(name string) string {
		if s, ok := mc.Inputs[name]; ok {
			return s
		}
		return name
	}
	for _, in := range bb.Metadata.GetInputs() {
		name := served(in.GetName())
		if name != in.GetName() {
			if m.backboneInput == nil {
				m.backboneInput = make(map[string]string)
			}
			m.backboneInput[name] = in.GetName()
		}
		m.inputs = append(m.inputs, &tritonpb.ModelMetadataResponse_TensorMetadata{Name: name, Datatype: in.GetDatatype(), Shape: in.GetShape()})
	}
	var cfg []*tritonpb.ModelInput
	for _, in := range bb.Config.GetInput() {
		if in.GetOptional() {
			m.optional[served(in.GetName())] = true
		}
		c := proto.Clone(in).(*tritonpb.ModelInput)
		c.Name = served(in.GetName())
		cfg = append(cfg, c)
	}
	for _, k := range slices.Sorted(maps.Keys(m.backboneInput)) {
		n := 0
		for _, in := range m.inputs {
			if in.GetName() == k {
				n++
			}
		}
		if n > 1 {
			b.problem(path+".inputs", false, "input %q is also the name of another input of %s: rename it too", k, describe(m.backbone))
		}
	}
	return cfg
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
