package pipeline

import (
	"fmt"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/sidecar/pipeline/graphform"
)

// graphModel checks the i-th configured model, of the graph form (an
// ensemble and the tensor to correct), and builds it, or records its
// problems and returns nil: Triton's answers about the ensemble and the
// step that produces the tensor, checked by package graphform. The model
// takes the ensemble's inputs, outputs, batching and version; its
// metadata and configuration are the ensemble's, as Triton answers them.
func (b *builder) graphModel(i int, prof *control.Profile) *Model {
	mc := b.cfg.Models[i]
	path := fmt.Sprintf("models[%d]", i)
	before := len(b.problems)
	ens := b.triton(ref{model: mc.Name})
	if ens.err != nil {
		b.problem(path+".name", ens.transient, "the graph form runs Triton's ensemble of this name: %v", ens.err)
		return nil
	}
	g, problems := graphform.Read(ens.Info, mc.Correct)
	for _, p := range problems {
		b.problem(path+"."+p.Path, false, "%s", p.Msg)
	}
	if g == nil {
		return nil
	}

	// The corrected tensor, as the step that produces it declares it.
	model, version, output := g.Producer()
	r := ref{model: model, version: version}
	producer := b.triton(r)
	calibrated := b.checkCalibration(path+".correct", path, mc, prof, r, output, producer.ServedVersion())
	if producer.err != nil {
		b.problem(path+".correct", producer.transient, "%s: %v", g.Source(), producer.err)
		return nil
	}
	form, err := g.Form(producer.Info, prof.D())
	if err != nil {
		b.problem(path+".correct", false, "%v", err)
		return nil
	}
	if len(b.problems) > before {
		return nil // the calibration's
	}
	m := &Model{
		name:     mc.Name,
		path:     path,
		version:  g.Version(),
		profile:  prof,
		graph:    form,
		ensemble: mc.Name,
		inputs:   ens.Metadata.GetInputs(),
		optional: make(map[string]bool),
		batching: ens.Config.GetMaxBatchSize() > 0,
		maxBatch: int(ens.Config.GetMaxBatchSize()),
		metadata: ens.Metadata,
		config:   ens.Config,
		stats:    b.opt.Stats.For(mc.Name),

		calibrated:   calibrated,
		producerStep: g.ProducerStep(),
	}
	for _, in := range ens.Config.GetInput() {
		if in.GetOptional() {
			m.optional[in.GetName()] = true
		}
	}
	if limit := b.cfg.Limits.MaxBatchSize; m.batching && limit > 0 && limit < m.maxBatch {
		m.maxBatch = limit
	}
	m.setExperiment(b.cfg)
	return m
}
