package pipeline

import (
	"fmt"
	"strconv"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/ensemble"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// graphModel checks the i-th configured model, of the graph form (an
// ensemble and the tensor to correct), and builds it, or records its
// problems and returns nil. The model takes the ensemble's inputs,
// outputs, batching and version; its metadata and configuration are the
// ensemble's, as Triton answers them.
func (b *builder) graphModel(i int, prof *control.Profile) *Model {
	mc := b.cfg.Models[i]
	path := fmt.Sprintf("models[%d]", i)
	before := len(b.problems)
	ens := b.triton(ref{model: mc.Name})
	if ens.err != nil {
		b.problem(path+".name", ens.transient, "the graph form runs Triton's ensemble of this name: %v", ens.err)
		return nil
	}
	if ens.Config.GetPlatform() != "ensemble" || ens.Config.GetEnsembleScheduling() == nil {
		b.problem(path+".name", false, "Triton's model %q is not an ensemble (platform %q): the graph form (correct:) runs an ensemble's steps; "+
			"for another model, name its backbone and heads instead", mc.Name, ens.Config.GetPlatform())
		return nil
	}
	g, err := ensemble.New(ens.Config)
	if err != nil {
		b.problem(path+".name", false, "%v", err)
		return nil
	}
	if _, err := g.Order(); err != nil {
		b.problem(path+".name", false, "ensemble %q: %v", mc.Name, err)
	}
	site, err := g.Locate(mc.Correct)
	if err != nil {
		b.problem(path+".correct", false, "ensemble %q: %v", mc.Name, err)
	}
	if len(b.problems) > before {
		return nil
	}
	m := &Model{
		name:     mc.Name,
		path:     path,
		version:  latestVersion(ens.Metadata.GetVersions()),
		profile:  prof,
		graph:    g,
		ensemble: mc.Name,
		site:     site,
		inputs:   ens.Metadata.GetInputs(),
		optional: make(map[string]bool),
		batching: ens.Config.GetMaxBatchSize() > 0,
		maxBatch: int(ens.Config.GetMaxBatchSize()),
		metadata: ens.Metadata,
		config:   ens.Config,
		stats:    b.opt.Stats.For(mc.Name),
	}
	for _, in := range ens.Config.GetInput() {
		if in.GetOptional() {
			m.optional[in.GetName()] = true
		}
	}
	for _, out := range ens.Metadata.GetOutputs() {
		m.order = append(m.order, out.GetName())
	}
	if limit := b.cfg.Limits.MaxBatchSize; m.batching && limit > 0 && limit < m.maxBatch {
		m.maxBatch = limit
	}

	// The corrected tensor, as the step that produces it declares it.
	m.backbone, m.feature = stepRef(g.Steps[site.Step]), site.Output
	b.checkCalibration(path+".correct", path, mc, prof, m.backbone, m.feature)
	producer := b.triton(m.backbone)
	if producer.err != nil {
		b.problem(path+".correct", producer.transient, "%s, whose output %q is the tensor %q: %v", g.Describe(site.Step), m.feature, site.Tensor, producer.err)
		return nil
	}
	d := int64(prof.D())
	out, err := producer.Output(m.feature, "")
	if err != nil {
		b.problem(path+".correct", false, "%s, whose output %q is the tensor %q: %v", g.Describe(site.Step), m.feature, site.Tensor, err)
		return nil
	}
	m.featureType = out.GetDatatype()
	shape := out.GetShape()
	what := fmt.Sprintf("tensor %q (output %q of %s)", site.Tensor, m.feature, g.Describe(site.Step))
	if err := triton.CheckFeatureDatatype(what, m.featureType); err != nil {
		b.problem(path+".correct", false, "%v", err)
	} else if len(shape) == 0 || (shape[len(shape)-1] != d && shape[len(shape)-1] != -1) {
		b.problem(path+".correct", false, "%s has shape %s, but the components file has D=%d (want the last dimension %d)",
			what, triton.FormatShape(shape), d, d)
	}
	if len(b.problems) > before {
		return nil
	}
	m.setExperiment(b.cfg)
	return m
}

// latestVersion returns the highest of the versions a model's metadata
// lists (Triton's choice when a request names none, under its default
// version policy), "1" when it lists none.
func latestVersion(versions []string) string {
	best, bestN := "1", int64(-1)
	for _, v := range versions {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > bestN {
			best, bestN = v, n
		}
	}
	return best
}

// stepRef names an ensemble step's model version ("" for the
// configuration's -1, Triton's choice).
func stepRef(s *tritonpb.ModelEnsembling_Step) ref {
	r := ref{model: s.GetModelName()}
	if v := s.GetModelVersion(); v > 0 {
		r.version = strconv.FormatInt(v, 10)
	}
	return r
}
