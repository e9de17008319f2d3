package evaluate

import (
	"context"
	"fmt"
	"sync"

	"github.com/mergectl/react-triton/internal/samples"
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/modelinfo"
)

// Models runs served models on batches of inputs: the backbones and experts
// on a task's inputs, the heads on (corrected) features.
type Models interface {
	// Run returns the output of model for the in.Rows() samples of in, as
	// that many rows of cols float32 values.
	Run(ctx context.Context, model react.ModelRef, in Samples) (out []float32, cols int, err error)
}

// Triton runs models on a Triton server with the batched runner
// (modelinfo.RunBatched): requests of at most Batch samples (and the model's
// max_batch_size), InFlight of them at once.
type Triton struct {
	Client   *triton.Client
	Batch    int // 0: modelinfo.DefaultBatch
	InFlight int // 0: modelinfo.DefaultInFlight

	mu     sync.Mutex
	models map[react.ModelRef]*servedModel
}

// servedModel is what a request to a model needs.
type servedModel struct {
	info   *modelinfo.Info
	inputs []samples.Input
	output string
}

// describeRef names a model for messages.
func describeRef(m react.ModelRef) string { return triton.DescribeModel(m.Name, m.Version) }

// resolve checks a model once (modelinfo.Info's rules): ready, batched
// inputs (what they take is checked against the samples by samples.Bind),
// and the output ref.Output or else its only output.
func (t *Triton) resolve(ctx context.Context, ref react.ModelRef) (*servedModel, error) {
	t.mu.Lock()
	m, ok := t.models[ref]
	t.mu.Unlock()
	if ok {
		return m, nil
	}
	info, err := modelinfo.Resolve(ctx, t.Client, ref.Name, ref.Version)
	if err != nil {
		return nil, err
	}
	ins, err := info.BatchedInputs()
	if err != nil {
		return nil, err
	}
	out, err := info.Output(ref.Output, "")
	if err != nil {
		return nil, err
	}
	m = &servedModel{info: info, output: out.GetName()}
	for _, in := range ins {
		m.inputs = append(m.inputs, samples.Input{Name: in.GetName(), Datatype: in.GetDatatype(), Shape: in.GetShape()})
	}
	t.mu.Lock()
	if t.models == nil {
		t.models = map[react.ModelRef]*servedModel{}
	}
	t.models[ref] = m
	t.mu.Unlock()
	return m, nil
}

// Run implements Models. Its errors start with the model.
func (t *Triton) Run(ctx context.Context, ref react.ModelRef, in Samples) ([]float32, int, error) {
	m, err := t.resolve(ctx, ref)
	if err != nil {
		return nil, 0, err // it names the model
	}
	out, cols, err := t.run(ctx, m, in)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", describeRef(ref), err)
	}
	return out, cols, nil
}

func (t *Triton) run(ctx context.Context, m *servedModel, in Samples) ([]float32, int, error) {
	specs := in.Specs()
	bind, err := samples.Bind(m.inputs, specs, "the samples")
	if err != nil {
		return nil, 0, err
	}
	opt := modelinfo.BatchOptions{Batch: t.Batch, InFlight: t.InFlight}
	return modelinfo.RunBatched(ctx, t.Client, m.info, m.output, in.Rows(), opt, func(lo, hi int) ([]triton.Tensor, error) {
		raw, err := in.Read(span(lo, hi))
		if err != nil {
			return nil, err
		}
		return bind.Tensors(specs, raw, hi-lo)
	})
}
