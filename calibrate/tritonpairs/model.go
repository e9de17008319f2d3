package tritonpairs

import (
	"context"
	"fmt"
	"strings"

	"github.com/mergectl/react-triton/internal/samples"
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// tritonModel is a model checked against the server's metadata: the inputs
// calibration samples go to and the output holding the feature.
type tritonModel struct {
	ref      react.ModelRef  // Output resolved
	role     string          // "backbone" or "expert of task t", for messages
	inputs   []samples.Input // every input, each batched
	outDT    string          // the feature output's datatype
	dim      int             // D, the number of elements of one sample's feature
	maxBatch int             // the model's max_batch_size, 0 if unknown
}

// describe names a model and its version for messages.
func describe(ref react.ModelRef) string {
	if ref.Version == "" {
		return fmt.Sprintf("model %q", ref.Name)
	}
	return fmt.Sprintf("model %q version %s", ref.Name, ref.Version)
}

// checkModel checks that a model is ready and has what a fit needs:
// batched inputs (what they take is checked against each task's samples by
// bind) and a floating-point output of a fixed size D per sample. An empty
// ref.Output picks the model's only output, or else an output named
// fallback.
func checkModel(ctx context.Context, c *triton.Client, role string, ref react.ModelRef, fallback string) (*tritonModel, error) {
	m := &tritonModel{ref: ref, role: role}
	errorf := func(format string, args ...any) error {
		return fmt.Errorf("%s %s: %s", role, describe(ref), fmt.Sprintf(format, args...))
	}
	ready, err := c.ModelReady(ctx, ref.Name, ref.Version)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", role, describe(ref), err)
	}
	if !ready {
		return nil, errorf("not ready on Triton at %s (is it in the model repository, and loaded?)", c.Addr())
	}
	meta, err := c.ModelMetadata(ctx, ref.Name, ref.Version)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", role, describe(ref), err)
	}

	inputs := meta.GetInputs()
	if len(inputs) == 0 {
		return nil, errorf("has no inputs")
	}
	for _, in := range inputs {
		shape := in.GetShape()
		if len(shape) < 2 || shape[0] != -1 {
			return nil, errorf("input %q has shape %s: want a batch dimension first (max_batch_size > 0) and a sample's shape after it", in.GetName(), triton.FormatShape(shape))
		}
		m.inputs = append(m.inputs, samples.Input{Name: in.GetName(), Datatype: in.GetDatatype(), Shape: shape[1:]})
	}

	outputs := meta.GetOutputs()
	var out *tritonpb.ModelMetadataResponse_TensorMetadata
	switch {
	case ref.Output != "":
		out = findTensor(outputs, ref.Output)
		if out == nil {
			return nil, errorf("has no output %q: its outputs are %s", ref.Output, tensorNames(outputs))
		}
	case len(outputs) == 1:
		out = outputs[0]
	case fallback != "" && findTensor(outputs, fallback) != nil:
		out = findTensor(outputs, fallback)
	default:
		return nil, errorf("has %d outputs (%s): name the one holding the feature", len(outputs), tensorNames(outputs))
	}
	m.ref.Output, m.outDT = out.GetName(), out.GetDatatype()
	if !samples.Floats[m.outDT] {
		return nil, errorf("output %q has datatype %s: want FP32, FP16, BF16 or FP64", m.ref.Output, m.outDT)
	}
	oshape := out.GetShape()
	if len(oshape) < 2 || oshape[0] != -1 {
		return nil, errorf("output %q has shape %s: want a batch dimension first, then the feature", m.ref.Output, triton.FormatShape(oshape))
	}
	m.dim = 1
	for _, d := range oshape[1:] {
		if d <= 0 {
			return nil, errorf("output %q has shape %s: the feature must have a fixed size", m.ref.Output, triton.FormatShape(oshape))
		}
		m.dim *= int(d)
	}

	// The configuration is optional (a server other than Triton may lack
	// it); without it requests are not capped.
	if cfg, err := c.ModelConfig(ctx, ref.Name, ref.Version); err == nil {
		m.maxBatch = int(cfg.GetMaxBatchSize())
	}
	return m, nil
}

// bind matches a source's tensors with the model's inputs (samples.Bind).
func (m *tritonModel) bind(specs []samples.Spec, source string) (samples.Binding, error) {
	b, err := samples.Bind(m.inputs, specs, source)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", m.role, describe(m.ref), err)
	}
	return b, nil
}

func findTensor(ts []*tritonpb.ModelMetadataResponse_TensorMetadata, name string) *tritonpb.ModelMetadataResponse_TensorMetadata {
	for _, t := range ts {
		if t.GetName() == name {
			return t
		}
	}
	return nil
}

func tensorNames(ts []*tritonpb.ModelMetadataResponse_TensorMetadata) string {
	if len(ts) == 0 {
		return "none"
	}
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = fmt.Sprintf("%q %s %s", t.GetName(), t.GetDatatype(), triton.FormatShape(t.GetShape()))
	}
	return strings.Join(names, ", ")
}
