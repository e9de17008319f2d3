package tritonpairs

import (
	"context"
	"fmt"

	"github.com/mergectl/react-triton/internal/samples"
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/modelinfo"
)

// tritonModel is a model checked against the server's metadata: the inputs
// calibration samples go to and the output holding the feature.
type tritonModel struct {
	ref      react.ModelRef  // Output resolved
	role     string          // "backbone" or "expert of task t", for messages
	inputs   []samples.Input // every input, each batched
	dim      int             // D, the number of elements of one sample's feature
	maxBatch int             // the model's max_batch_size, 0 if unknown
}

// describe names a model and its version for messages.
func describe(ref react.ModelRef) string { return triton.DescribeModel(ref.Name, ref.Version) }

// checkModel checks that a model is ready and has what a fit needs
// (modelinfo.Info's rules): batched inputs (what they take is checked
// against each task's samples by bind) and a feature output (FP32, FP16 or
// BF16) of a fixed size D per sample. An empty ref.Output picks the model's
// only output, or else an output named fallback. The error starts with the
// model's role.
func checkModel(ctx context.Context, c *triton.Client, role string, ref react.ModelRef, fallback string) (*tritonModel, error) {
	m, err := resolveFeature(ctx, c, ref, fallback)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", role, err)
	}
	m.role = role
	return m, nil
}

func resolveFeature(ctx context.Context, c *triton.Client, ref react.ModelRef, fallback string) (*tritonModel, error) {
	info, err := modelinfo.Resolve(ctx, c, ref.Name, ref.Version)
	if err != nil {
		return nil, err
	}
	ins, err := info.BatchedInputs()
	if err != nil {
		return nil, err
	}
	out, err := info.Output(ref.Output, fallback)
	if err != nil {
		return nil, err
	}
	if err := info.CheckFeature("output", out); err != nil {
		return nil, err
	}
	m := &tritonModel{ref: ref, maxBatch: info.MaxBatchSize()}
	m.ref.Output = out.GetName()
	if m.dim, err = info.FeatureSize(out); err != nil {
		return nil, err
	}
	for _, in := range ins {
		m.inputs = append(m.inputs, samples.Input{Name: in.GetName(), Datatype: in.GetDatatype(), Shape: in.GetShape()})
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
