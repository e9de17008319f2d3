package modelinfo

import (
	"fmt"
	"strconv"

	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// Info is what Triton says about one model version: its metadata and,
// when the server gives it, its configuration. Its methods are the one set
// of rules that pick a model's inputs and outputs, so that calibrate fit,
// calibrate eval and the sidecar word a problem the same way: each error
// starts with the model, as triton.DescribeModel names it.
type Info struct {
	// Name and Version are the model asked for; an empty Version lets the
	// server choose.
	Name, Version string
	// Metadata is the model's metadata.
	Metadata *tritonpb.ModelMetadataResponse
	// Config is the model's configuration, nil when the server did not
	// give it.
	Config *tritonpb.ModelConfig
}

// String names the model as triton.DescribeModel does.
func (m *Info) String() string { return triton.DescribeModel(m.Name, m.Version) }

// ServedVersion returns the version that answers the model's requests:
// Version when one was asked for, else the highest that the metadata lists
// (the server's choice under Triton's default version policy), "" when it
// lists none.
func (m *Info) ServedVersion() string {
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
func (m *Info) MaxBatchSize() int { return int(m.Config.GetMaxBatchSize()) }

// Output returns the output called name. An empty name picks the model's
// only output, or else the one called fallback (when fallback is not empty
// and the model has it).
func (m *Info) Output(name, fallback string) (*triton.TensorMetadata, error) {
	return m.pick("output", m.Metadata.GetOutputs(), name, fallback)
}

// Input returns the input called name. An empty name picks the model's
// only input.
func (m *Info) Input(name string) (*triton.TensorMetadata, error) {
	return m.pick("input", m.Metadata.GetInputs(), name, "")
}

// pick finds a tensor of kind ("input" or "output") by name, or the only
// one, or the fallback.
func (m *Info) pick(kind string, ts []*triton.TensorMetadata, name, fallback string) (*triton.TensorMetadata, error) {
	switch {
	case name != "":
		if t := triton.FindTensor(ts, name); t != nil {
			return t, nil
		}
		return nil, fmt.Errorf("%s has no %s %q (%ss: %s)", m, kind, name, kind, triton.TensorList(ts))
	case len(ts) == 1:
		return ts[0], nil
	case fallback != "" && triton.FindTensor(ts, fallback) != nil:
		return triton.FindTensor(ts, fallback), nil
	case len(ts) == 0:
		return nil, fmt.Errorf("%s has no %ss", m, kind)
	}
	return nil, fmt.Errorf("%s has %d %ss (%s): name the one to use", m, len(ts), kind, triton.TensorList(ts))
}

// BatchedInputs returns the model's inputs, each with its shape after the
// batch dimension: every input must have one first (-1: the model's
// max_batch_size is above 0).
func (m *Info) BatchedInputs() ([]*triton.TensorMetadata, error) {
	ins := m.Metadata.GetInputs()
	if len(ins) == 0 {
		return nil, fmt.Errorf("%s has no inputs", m)
	}
	out := make([]*triton.TensorMetadata, len(ins))
	for i, in := range ins {
		shape := in.GetShape()
		if len(shape) == 0 || shape[0] != -1 {
			return nil, fmt.Errorf("%s input %q has shape %s: want a batch dimension first (max_batch_size > 0), then a sample's shape",
				m, in.GetName(), triton.FormatShape(shape))
		}
		out[i] = &triton.TensorMetadata{Name: in.GetName(), Datatype: in.GetDatatype(), Shape: shape[1:]}
	}
	return out, nil
}
