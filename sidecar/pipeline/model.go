package pipeline

import (
	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/sidecar/modelstats"
	"github.com/mergectl/react-triton/sidecar/pipeline/graphform"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// Version is the only version of a controllable model of the explicit
// form. A request may name it or no version. A model of the graph form
// has the version of the ensemble it runs (Model.Version).
const Version = "1"

// Platform is the platform and backend a controllable model of the
// explicit form reports in its metadata and configuration, unless it
// shadows a Triton model, whose platform it reports instead.
const Platform = "react"

// ref names a Triton model version.
type ref struct {
	model, version string
}

// head is one head of a controllable model.
type head struct {
	ref
	task string
	// input is the head input fed with the feature, and inputType its
	// datatype (FP32, FP16 or BF16).
	input, inputType string
	// outputs are the head outputs the client may ask for, each with the
	// name the client sees.
	outputs []outputName
}

// outputName maps a head output to the name the client sees.
type outputName struct {
	head, client string
}

// output locates a client-visible output.
type output struct {
	head int    // index in Model.heads
	name string // the head's own output name
}

// Model is one controllable model, checked against Triton. It is immutable;
// a reload builds new ones.
//
// A model of the graph form runs the steps of an ensemble (graph) and has
// its inputs, outputs and version; a model of the explicit form calls a
// backbone and heads.
type Model struct {
	name    string
	path    string // "models[i]", for logs
	version string // the version clients may name, besides none
	profile *control.Profile
	// graph runs the steps of the ensemble (named ensemble) the model is
	// (graph form), nil for the explicit form.
	graph    *graphform.Form
	ensemble string

	// backbone is the explicit form's, and feature its output that is
	// corrected, in featureType (FP32, FP16 or BF16).
	backbone    ref
	feature     string
	featureType string
	// calibrated is the version of the corrected model the components
	// file records ("" when it records none, or when the model is a
	// declared variant), and producerStep the graph form's step that
	// produces the corrected tensor: an answer from another version (one
	// Triton loaded after start-up) is refused rather than corrected with
	// the wrong statistics.
	calibrated   string
	producerStep int
	// inputs are the model's inputs: the ensemble's (graph form), or the
	// backbone's under the names clients use (explicit form).
	inputs []*tritonpb.ModelMetadataResponse_TensorMetadata
	// backboneInput maps a renamed input's client name to the backbone's
	// (explicit form).
	backboneInput map[string]string
	optional      map[string]bool
	// batching reports whether the first dimension is the batch, and
	// maxBatch is the largest batch accepted.
	batching bool
	maxBatch int
	heads    []head
	outputs  map[string]output // by client name
	order    []string          // client output names, in configuration order

	metadata *tritonpb.ModelMetadataResponse
	config   *tritonpb.ModelConfig
	stats    *modelstats.Stats

	// experiment is the experiment the model takes part in (nil for none),
	// and keyHeader and keyParameter where a request carries its key.
	experiment              *control.Experiment
	keyHeader, keyParameter string
	// shadow is the model's part in its experiment's shadow comparison,
	// nil for none.
	shadow *shadowCmp
}

// Name returns the name clients call.
func (m *Model) Name() string { return m.name }

// Profile returns the preference profile the model resolves against.
func (m *Model) Profile() *control.Profile { return m.profile }

// Version returns the version clients may name: Version for the explicit
// form, the ensemble's version for the graph form.
func (m *Model) Version() string { return m.version }

// OwnVersion reports whether a request's version (empty: none) is the
// one the model serves, whose statistics are the sidecar's. A graph-form
// model relays a request for another version of its ensemble that gets no
// correction to Triton, which answers and counts it.
func (m *Model) OwnVersion(version string) bool { return version == "" || version == m.version }

// Relays reports whether version is left to Triton: a graph-form model
// relays the requests for its ensemble's other versions (those that get no
// correction), and Triton's statistics and index entries of them stand,
// counted by Triton. An explicit-form model relays none.
func (m *Model) Relays(version string) bool { return m.graph != nil && !m.OwnVersion(version) }

// Ensemble returns the name of the Triton ensemble whose graph the model
// runs (graph form), "" for the explicit form. Triton itself answers
// metadata, configuration and readiness for such a model.
func (m *Model) Ensemble() string {
	if m.graph == nil {
		return ""
	}
	return m.ensemble
}

// Tasks returns the tasks of the model's heads, in order (none for the
// graph form, whose steps the configuration does not name).
func (m *Model) Tasks() []string {
	tasks := make([]string, len(m.heads))
	for i, h := range m.heads {
		tasks[i] = h.task
	}
	return tasks
}

// Metadata returns the model's metadata, as Triton's ModelMetadata answers
// it: for the explicit form, the backbone's inputs and the heads' outputs
// under their client names; for the graph form, the ensemble's, as Triton
// answered it when the model was built. The caller must not modify it.
func (m *Model) Metadata() *tritonpb.ModelMetadataResponse { return m.metadata }

// Config returns the model's configuration, as Triton's ModelConfig
// answers it. The caller must not modify it.
func (m *Model) Config() *tritonpb.ModelConfig { return m.config }

// Stats returns the model's statistics, which outlive reloads.
func (m *Model) Stats() *modelstats.Stats { return m.stats }

// Dependencies returns the Triton models the controllable model calls: the
// backbone first, then the heads; for the graph form, the ensemble, whose
// readiness is its steps'.
func (m *Model) Dependencies() (models, versions []string) {
	if m.graph != nil {
		return []string{m.ensemble}, []string{""}
	}
	models = append(models, m.backbone.model)
	versions = append(versions, m.backbone.version)
	for _, h := range m.heads {
		models = append(models, h.model)
		versions = append(versions, h.version)
	}
	return models, versions
}
