package pipeline

import (
	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// Version is the only version of a controllable model. A request may name
// it or no version.
const Version = "1"

// Platform is the platform and backend a controllable model reports in its
// metadata and configuration.
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
type Model struct {
	name     string
	path     string // "models[i]", for logs
	profile  *control.Profile
	backbone ref
	feature  string // the backbone output that is corrected
	// featureType is the backbone output's datatype (FP32, FP16 or BF16).
	featureType string
	// inputs are the backbone's inputs, which are the model's.
	inputs   []*tritonpb.ModelMetadataResponse_TensorMetadata
	optional map[string]bool
	// batching reports whether the first dimension is the batch, and
	// maxBatch is the largest batch accepted.
	batching bool
	maxBatch int
	heads    []head
	outputs  map[string]output // by client name
	order    []string          // client output names, in configuration order

	metadata *tritonpb.ModelMetadataResponse
	config   *tritonpb.ModelConfig
	stats    *Stats

	// experiment is the experiment the model takes part in (nil for none),
	// and keyHeader and keyParameter where a request carries its key.
	experiment              *control.Experiment
	keyHeader, keyParameter string
}

// Name returns the name clients call.
func (m *Model) Name() string { return m.name }

// Profile returns the preference profile the model resolves against.
func (m *Model) Profile() *control.Profile { return m.profile }

// Tasks returns the tasks of the model's heads, in order.
func (m *Model) Tasks() []string {
	tasks := make([]string, len(m.heads))
	for i, h := range m.heads {
		tasks[i] = h.task
	}
	return tasks
}

// Metadata returns the model's metadata, as Triton's ModelMetadata answers
// it: the backbone's inputs and the heads' outputs under their client
// names. The caller must not modify it.
func (m *Model) Metadata() *tritonpb.ModelMetadataResponse { return m.metadata }

// Config returns the model's configuration, as Triton's ModelConfig
// answers it. The caller must not modify it.
func (m *Model) Config() *tritonpb.ModelConfig { return m.config }

// Stats returns the model's statistics, which outlive reloads.
func (m *Model) Stats() *Stats { return m.stats }

// Dependencies returns the Triton models the controllable model calls: the
// backbone first, then the heads.
func (m *Model) Dependencies() (models, versions []string) {
	models = append(models, m.backbone.model)
	versions = append(versions, m.backbone.version)
	for _, h := range m.heads {
		models = append(models, h.model)
		versions = append(versions, h.version)
	}
	return models, versions
}
