package pipeline

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/mergectl/react-triton/config"
	"github.com/mergectl/react-triton/control"
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
	m := &Model{
		name:     mc.Name,
		path:     path,
		version:  Version,
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
	b.checkCalibration(path+".backbone.model", path, mc, prof, m.backbone, m.feature)
	var featureShape []int64
	if bbOK {
		out, err := bb.Output(m.feature, "")
		if err == nil {
			m.featureType, featureShape = out.GetDatatype(), out.GetShape()
			err = bb.CheckFeature("output", out)
		}
		if err == nil && (len(featureShape) == 0 || (featureShape[len(featureShape)-1] != int64(prof.D()) && featureShape[len(featureShape)-1] != -1)) {
			err = fmt.Errorf("%s output %q has shape %s, but the components file has D=%d (want the last dimension %d)",
				describe(m.backbone), m.feature, triton.FormatShape(featureShape), prof.D(), prof.D())
		}
		if err != nil {
			b.problem(path+".backbone.output", false, "%v", err)
		}
	}
	inputs := b.renameInputs(path, mc, m, bb)
	m.batching = bb.Config.GetMaxBatchSize() > 0
	m.maxBatch = int(bb.Config.GetMaxBatchSize())

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
		in, err := hm.Input(hc.Input)
		if err != nil {
			b.problem(hpath+".input", false, "%v", err)
			continue
		}
		ins := hm.Metadata.GetInputs()
		h.input, h.inputType = in.GetName(), in.GetDatatype()
		if err := hm.CheckFeature("input", in); err != nil {
			b.problem(hpath+".model", false, "%v", err)
		}
		if bbOK && featureShape != nil && !shapesCompatible(featureShape, in.GetShape()) {
			b.problem(hpath+".model", false, "%s input %q has shape %s, which does not take the backbone's %q of shape %s",
				describe(h.ref), h.input, triton.FormatShape(in.GetShape()), m.feature, triton.FormatShape(featureShape))
		}
		for _, other := range ins {
			if other != in && !isOptional(hm.Config, other.GetName()) {
				b.problem(hpath+".model", false, "%s needs input %q besides the feature; a head may only need the feature", describe(h.ref), other.GetName())
			}
		}
		if headBatching := hm.Config.GetMaxBatchSize() > 0; !bbOK {
			// The batching rule needs the backbone's configuration.
		} else if headBatching != m.batching {
			b.problem(hpath+".model", false, "%s has max_batch_size %d and the backbone %d: both must batch or neither",
				describe(h.ref), hm.Config.GetMaxBatchSize(), bb.Config.GetMaxBatchSize())
		} else if m.batching && int(hm.Config.GetMaxBatchSize()) < m.maxBatch {
			m.maxBatch = int(hm.Config.GetMaxBatchSize())
		}
		// The outputs, renamed.
		cfgByName := make(map[string]*tritonpb.ModelOutput)
		for _, o := range hm.Config.GetOutput() {
			cfgByName[o.GetName()] = o
		}
		var mapping []outputName
		if len(hc.Outputs) == 0 {
			for _, o := range hm.Metadata.GetOutputs() {
				mapping = append(mapping, outputName{head: o.GetName(), client: o.GetName()})
			}
		} else {
			for _, k := range sortedKeys(hc.Outputs) {
				if _, err := hm.Output(k, ""); err != nil {
					b.problem(fmt.Sprintf("%s.outputs.%s", hpath, k), false, "%v", err)
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
			om := triton.FindTensor(hm.Metadata.GetOutputs(), on.head)
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
		Outputs:  outMeta,
	}
	m.config = &tritonpb.ModelConfig{
		Name:         m.name,
		Platform:     Platform,
		Backend:      Platform,
		MaxBatchSize: int32(m.maxBatch),
		Input:        inputs,
		Output:       outCfg,
		Parameters:   m.configParameters(mc, b.cfg),
	}
	if shadow != nil {
		b.checkSignature(path, m, shadow)
	}
	if len(b.problems) > before {
		return nil
	}
	return m
}

// renameInputs sets the model's inputs: the backbone's, under the names
// the configuration's inputs map gives them. It returns the inputs of the
// model's configuration, renamed alike.
func (b *builder) renameInputs(path string, mc config.Model, m *Model, bb *tritonModel) []*tritonpb.ModelInput {
	for _, k := range sortedKeys(mc.Inputs) {
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
	for _, k := range sortedKeys(m.backboneInput) {
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
