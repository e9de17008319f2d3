package triton

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mergectl/react-triton/triton/tritonpb"
)

// Signature is what a client sees of a model: its inputs and outputs
// (names, datatypes, shapes), platform and max_batch_size. A model that
// stands in for another under its name, as the sidecar's controllable
// models do, must have the same.
type Signature struct {
	Platform        string
	MaxBatchSize    int32
	Inputs, Outputs []*tritonpb.ModelMetadataResponse_TensorMetadata
}

// SignatureOf returns the signature of a model's metadata and
// configuration.
func SignatureOf(meta *tritonpb.ModelMetadataResponse, cfg *tritonpb.ModelConfig) Signature {
	return Signature{Platform: meta.GetPlatform(), MaxBatchSize: cfg.GetMaxBatchSize(), Inputs: meta.GetInputs(), Outputs: meta.GetOutputs()}
}

// Differences lists how the signature served (s) differs from Triton's
// model (t, named name), one line each: inputs and outputs missing on
// either side or with another datatype or shape, the platform, and
// max_batch_size. Inputs and outputs are compared by name, in any order.
func (s Signature) Differences(t Signature, name string) []string {
	var out []string
	out = append(out, tensorDifferences("input", s.Inputs, t.Inputs, name)...)
	out = append(out, tensorDifferences("output", s.Outputs, t.Outputs, name)...)
	if s.Platform != t.Platform {
		out = append(out, fmt.Sprintf("platform %q, where Triton's %q has %q", s.Platform, name, t.Platform))
	}
	if s.MaxBatchSize != t.MaxBatchSize {
		out = append(out, fmt.Sprintf("max_batch_size %d, where Triton's %q has %d", s.MaxBatchSize, name, t.MaxBatchSize))
	}
	return out
}

// tensorDifferences compares the inputs (or outputs: kind) served with
// Triton's.
func tensorDifferences(kind string, served, theirs []*tritonpb.ModelMetadataResponse_TensorMetadata, name string) []string {
	var out []string
	find := func(ts []*tritonpb.ModelMetadataResponse_TensorMetadata, n string) *tritonpb.ModelMetadataResponse_TensorMetadata {
		for _, t := range ts {
			if t.GetName() == n {
				return t
			}
		}
		return nil
	}
	for _, s := range served {
		t := find(theirs, s.GetName())
		switch {
		case t == nil:
			out = append(out, fmt.Sprintf("%s %q is served, but Triton's %q has no such %s (its %ss: %s)", kind, s.GetName(), name, kind, kind, TensorList(theirs)))
		case s.GetDatatype() != t.GetDatatype() || !slices.Equal(s.GetShape(), t.GetShape()):
			out = append(out, fmt.Sprintf("%s %q is served as %s %s, where Triton's %q has %s %s", kind, s.GetName(),
				s.GetDatatype(), FormatShape(s.GetShape()), name, t.GetDatatype(), FormatShape(t.GetShape())))
		}
	}
	for _, t := range theirs {
		if find(served, t.GetName()) == nil {
			var others []string
			for _, s := range served {
				others = append(others, s.GetName())
			}
			out = append(out, fmt.Sprintf("%s %q of Triton's %q is not served (%ss served: %s)", kind, t.GetName(), name, kind, strings.Join(others, ", ")))
		}
	}
	return out
}
