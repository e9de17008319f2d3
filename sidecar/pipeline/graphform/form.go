// Package graphform is the graph form of a controllable model without
// the calls to Triton: an ensemble's step graph read and checked for a
// correction (Read, Ensemble.Form), and a corrected request run through
// its steps (Form.Run), W_p applied to the named tensor as soon as the
// step that produces it has answered, the answer assembled as Triton's
// ensemble would give it.
//
// Package pipeline asks Triton about the ensemble and the producing step,
// reports the problems at their paths in the configuration, and gives
// Form.Run the call of each step; a request that gets no correction it
// sends to the ensemble itself.
package graphform

import (
	"fmt"
	"strconv"

	"github.com/mergectl/react-triton/problem"
	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/ensemble"
	"github.com/mergectl/react-triton/triton/modelinfo"
)

// Ensemble is the ensemble of a model of the graph form, read from
// Triton's answers about it, with the tensor to correct located in its
// step graph.
type Ensemble struct {
	name    string
	version string
	graph   *ensemble.Graph
	site    ensemble.Site
	// outputs are the ensemble's outputs, in the order of its metadata,
	// and bytes those of datatype BYTES.
	outputs []string
	bytes   map[string]bool
}

// Read reads the step graph of the ensemble ens (Triton's metadata and
// configuration of the model a graph-form model is named for) and locates
// the tensor correct in it: produced by exactly one step and read by at
// least one. It returns every problem at once, at "name" (the ensemble)
// or "correct" (the tensor), and an Ensemble only when there are none.
func Read(ens modelinfo.Info, correct string) (*Ensemble, problem.List) {
	var p problem.List
	if ens.Config.GetPlatform() != "ensemble" || ens.Config.GetEnsembleScheduling() == nil {
		p.Add("name", "Triton's model %q is not an ensemble (platform %q): the graph form (correct:) runs an ensemble's steps; "+
			"for another model, name its backbone and heads instead", ens.Name, ens.Config.GetPlatform())
		return nil, p
	}
	g, err := ensemble.New(ens.Config)
	if err != nil {
		p.Add("name", "%v", err)
		return nil, p
	}
	if _, err := g.Order(); err != nil {
		p.Add("name", "ensemble %q: %v", ens.Name, err)
	}
	site, err := g.Locate(correct)
	if err != nil {
		p.Add("correct", "ensemble %q: %v", ens.Name, err)
	}
	if len(p) > 0 {
		return nil, p
	}
	e := &Ensemble{name: ens.Name, version: latestVersion(ens.Metadata.GetVersions()), graph: g, site: site}
	for _, out := range ens.Metadata.GetOutputs() {
		e.outputs = append(e.outputs, out.GetName())
		if out.GetDatatype() == "BYTES" {
			if e.bytes == nil {
				e.bytes = make(map[string]bool)
			}
			e.bytes[out.GetName()] = true
		}
	}
	return e, nil
}

// Version returns the version of the ensemble that requests without one
// reach: the highest its metadata lists (Triton's choice under its
// default version policy), "1" when it lists none.
func (e *Ensemble) Version() string { return e.version }

// Producer returns the model version of the step that produces the tensor
// to correct (version "" for Triton's choice) and its output that is the
// tensor.
func (e *Ensemble) Producer() (model, version, output string) {
	s := e.graph.Steps[e.site.Step]
	if v := s.GetModelVersion(); v > 0 {
		version = strconv.FormatInt(v, 10)
	}
	return s.GetModelName(), version, e.site.Output
}

// ProducerStep returns the index of the step that produces the tensor to
// correct, as the calls of Request.Call number the steps.
func (e *Ensemble) ProducerStep() int { return e.site.Step }

// Source names, in messages, the step that produces the tensor to
// correct, its output and the tensor: `step 1 ("backbone"), whose output
// "feature" is the tensor "emb"`.
func (e *Ensemble) Source() string {
	return fmt.Sprintf("%s, whose output %q is the tensor %q", e.graph.Describe(e.site.Step), e.site.Output, e.site.Tensor)
}

// Form checks the tensor to correct as producer (Triton's metadata of the
// step's model, Producer) declares it: a feature datatype (FP32, FP16 or
// BF16) and d, the components file's width, as its last dimension. It
// returns the form that serves requests.
func (e *Ensemble) Form(producer modelinfo.Info, d int) (*Form, error) {
	out, err := producer.Output(e.site.Output, "")
	if err != nil {
		return nil, fmt.Errorf("%s: %v", e.Source(), err)
	}
	what := fmt.Sprintf("tensor %q (output %q of %s)", e.site.Tensor, e.site.Output, e.graph.Describe(e.site.Step))
	if err := modelinfo.CheckFeatureDatatype(what, out.GetDatatype()); err != nil {
		return nil, err
	}
	if shape := out.GetShape(); len(shape) == 0 || (shape[len(shape)-1] != int64(d) && shape[len(shape)-1] != -1) {
		return nil, fmt.Errorf("%s has shape %s, but the components file has D=%d (want the last dimension %d)",
			what, triton.FormatShape(shape), d, d)
	}
	return &Form{ens: *e, datatype: out.GetDatatype(), d: d}, nil
}

// Form is a model of the graph form, checked: its ensemble, and the
// datatype and width of the tensor it corrects. It is immutable.
type Form struct {
	ens Ensemble
	// datatype is the corrected tensor's datatype, as its producer
	// declared it when the form was checked, and d its last dimension.
	datatype string
	d        int
}

// latestVersion returns the highest of the versions a model's metadata
// lists, "1" when it lists none.
func latestVersion(versions []string) string {
	if v := modelinfo.HighestVersion(versions); v != "" {
		return v
	}
	return "1"
}
