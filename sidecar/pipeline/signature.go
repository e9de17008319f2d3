package pipeline

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// signature is what a client sees of a model: its inputs and outputs
// (names, datatypes, shapes), platform and max_batch_size.
type signature struct {
	platform        string
	maxBatchSize    int32
	inputs, outputs []*tritonpb.ModelMetadataResponse_TensorMetadata
}

// signatureOf returns the signature of a model's metadata and
// configuration.
func signatureOf(meta *tritonpb.ModelMetadataResponse, cfg *tritonpb.ModelConfig) signature {
	return signature{platform: meta.GetPlatform(), maxBatchSize: cfg.GetMaxBatchSize(), inputs: meta.GetInputs(), outputs: meta.GetOutputs()}
}

// differences lists how the signature served (s) differs from Triton's
// model (t, named name), one line each: inputs and outputs missing on
// either side or with another datatype or shape, the platform, and
// max_batch_size. Inputs and outputs are compared by name, in any order.
func (s signature) differences(t signature, name string) []string {
	var out []string
	out = append(out, tensorDifferences("input", s.inputs, t.inputs, name)...)
	out = append(out, tensorDifferences("output", s.outputs, t.outputs, name)...)
	if s.platform != t.platform {
		out = append(out, fmt.Sprintf("platform %q, where Triton's %q has %q", s.platform, name, t.platform))
	}
	if s.maxBatchSize != t.maxBatchSize {
		out = append(out, fmt.Sprintf("max_batch_size %d, where Triton's %q has %d", s.maxBatchSize, name, t.maxBatchSize))
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
			out = append(out, fmt.Sprintf("%s %q is served, but Triton's %q has no such %s (its %ss: %s)", kind, s.GetName(), name, kind, kind, triton.TensorList(theirs)))
		case s.GetDatatype() != t.GetDatatype() || !slices.Equal(s.GetShape(), t.GetShape()):
			out = append(out, fmt.Sprintf("%s %q is served as %s %s, where Triton's %q has %s %s", kind, s.GetName(),
				s.GetDatatype(), triton.FormatShape(s.GetShape()), name, t.GetDatatype(), triton.FormatShape(t.GetShape())))
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

// checkSignature records, as problems at the model's name, every
// difference between the signature a controllable model serves and that of
// the Triton model of the same name it shadows: clients that change only
// the address must see the same model.
func (b *builder) checkSignature(path string, m *Model, shadow *tritonModel) {
	served := signatureOf(m.metadata, m.config)
	for _, d := range served.differences(signatureOf(shadow.Metadata, shadow.Config), m.name) {
		b.problem(path+".name", false, "%s (rename inputs and outputs to match, or set signature: differs if the change is intended)", d)
	}
}
