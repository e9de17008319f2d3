package triton

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/mergectl/react-triton/triton/tritonpb"
)

// TensorMetadata is one input or output of a model's metadata.
type TensorMetadata = tritonpb.ModelMetadataResponse_TensorMetadata

// ModelInfo is what Triton says about one model version: its metadata and,
// when the server gives it, its configuration. Its methods are the one set
// of rules that pick a model's inputs and outputs, so that calibrate fit,
// calibrate eval and the sidecar word a problem the same way: each error
// starts with the model, as DescribeModel names it.
type ModelInfo struct {
	// Name and Version are the model asked for; an empty Version lets the
	// server choose.
	Name, Version string
	// Metadata is the model's metadata.
	Metadata *tritonpb.ModelMetadataResponse
	// Config is the model's configuration, nil when the server did not
	// give it.
	Config *tritonpb.ModelConfig
}

// DescribeModel names a model version in messages: `model "name"`, or
// `model "name" version 2`.
func DescribeModel(name, version string) string {
	if version == "" {
		return fmt.Sprintf("model %q", name)
	}
	return fmt.Sprintf("model %q version %s", name, version)
}

// String names the model as DescribeModel does.
func (m *ModelInfo) String() string { return DescribeModel(m.Name, m.Version) }

// ServedVersion returns the version that answers the model's requests:
// Version when one was asked for, else the highest that the metadata lists
// (the server's choice under Triton's default version policy), "" when it
// lists none.
func (m *ModelInfo) ServedVersion() string {
	if m.Version != "" {
		return m.Version
	}
	return HighestVersion(m.Metadata.GetVersions())
}

// HighestVersion returns the highest of the versions a model's metadata
// lists (numerically), "" when none is a number.
func HighestVersion(versions []string) string {
	best, bestN := "", int64(-1)
	for _, v := range versions {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > bestN {
			best, bestN = v, n
		}
	}
	return best
}

// MaxBatchSize returns the model's max_batch_size: 0 when it does not
// batch, or when its configuration is unknown.
func (m *ModelInfo) MaxBatchSize() int { return int(m.Config.GetMaxBatchSize()) }

// Output returns the output called name. An empty name picks the model's
// only output, or else the one called fallback (when fallback is not empty
// and the model has it).
func (m *ModelInfo) Output(name, fallback string) (*TensorMetadata, error) {
	return m.pick("output", m.Metadata.GetOutputs(), name, fallback)
}

// Input returns the input called name. An empty name picks the model's
// only input.
func (m *ModelInfo) Input(name string) (*TensorMetadata, error) {
	return m.pick("input", m.Metadata.GetInputs(), name, "")
}

// pick finds a tensor of kind ("input" or "output") by name, or the only
// one, or the fallback.
func (m *ModelInfo) pick(kind string, ts []*TensorMetadata, name, fallback string) (*TensorMetadata, error) {
	switch {
	case name != "":
		if t := FindTensor(ts, name); t != nil {
			return t, nil
		}
		return nil, fmt.Errorf("%s has no %s %q (%ss: %s)", m, kind, name, kind, TensorList(ts))
	case len(ts) == 1:
		return ts[0], nil
	case fallback != "" && FindTensor(ts, fallback) != nil:
		return FindTensor(ts, fallback), nil
	case len(ts) == 0:
		return nil, fmt.Errorf("%s has no %ss", m, kind)
	}
	return nil, fmt.Errorf("%s has %d %ss (%s): name the one to use", m, len(ts), kind, TensorList(ts))
}

// BatchedInputs returns the model's inputs, each with its shape after the
// batch dimension: every input must have one first (-1: the model's
// max_batch_size is above 0).
func (m *ModelInfo) BatchedInputs() ([]*TensorMetadata, error) {
	ins := m.Metadata.GetInputs()
	if len(ins) == 0 {
		return nil, fmt.Errorf("%s has no inputs", m)
	}
	out := make([]*TensorMetadata, len(ins))
	for i, in := range ins {
		shape := in.GetShape()
		if len(shape) == 0 || shape[0] != -1 {
			return nil, fmt.Errorf("%s input %q has shape %s: want a batch dimension first (max_batch_size > 0), then a sample's shape",
				m, in.GetName(), FormatShape(shape))
		}
		out[i] = &TensorMetadata{Name: in.GetName(), Datatype: in.GetDatatype(), Shape: shape[1:]}
	}
	return out, nil
}

// FindTensor returns the tensor of ts called name, or nil.
func FindTensor(ts []*TensorMetadata, name string) *TensorMetadata {
	for _, t := range ts {
		if t.GetName() == name {
			return t
		}
	}
	return nil
}

// TensorList lists tensors' names for messages: "a, b", or "none".
func TensorList(ts []*TensorMetadata) string {
	if len(ts) == 0 {
		return "none"
	}
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.GetName()
	}
	return strings.Join(names, ", ")
}
