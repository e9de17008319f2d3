package evaluate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/mergectl/react-triton/internal/samples"
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/triton"
)

// Models runs served models on batches of inputs: the backbones and experts
// on a task's inputs, the heads on (corrected) features.
type Models interface {
	// Run returns the output of model for the in.Rows() samples of in, as
	// that many rows of cols float32 values.
	Run(ctx context.Context, model react.ModelRef, in Samples) (out []float32, cols int, err error)
}

// Defaults of Triton.
const (
	// DefaultBatch caps the samples per request when the model allows more.
	DefaultBatch = 256
	// DefaultInFlight is the number of requests in flight at once.
	DefaultInFlight = 4
)

// Triton runs models on a Triton server, in batches of at most Batch
// samples (and the model's max_batch_size), InFlight requests at once.
type Triton struct {
	Client   *triton.Client
	Batch    int // 0: DefaultBatch
	InFlight int // 0: DefaultInFlight

	mu     sync.Mutex
	models map[react.ModelRef]*servedModel
}

// servedModel is what a request to a model needs.
type servedModel struct {
	inputs   []samples.Input
	output   string
	maxBatch int
}

// describeRef names a model for messages.
func describeRef(m react.ModelRef) string {
	if m.Version == "" {
		return fmt.Sprintf("model %q", m.Name)
	}
	return fmt.Sprintf("model %q version %s", m.Name, m.Version)
}

// resolve checks a model once: ready, batched inputs (what they take is
// checked against the samples by samples.Bind), and the output ref.Output
// or else its only output.
func (t *Triton) resolve(ctx context.Context, ref react.ModelRef) (*servedModel, error) {
	t.mu.Lock()
	m, ok := t.models[ref]
	t.mu.Unlock()
	if ok {
		return m, nil
	}
	ready, err := t.Client.ModelReady(ctx, ref.Name, ref.Version)
	if err != nil {
		return nil, err
	}
	if !ready {
		return nil, fmt.Errorf("not ready on Triton at %s (is it loaded?)", t.Client.Addr())
	}
	meta, err := t.Client.ModelMetadata(ctx, ref.Name, ref.Version)
	if err != nil {
		return nil, err
	}
	m = &servedModel{output: ref.Output}
	for _, in := range meta.GetInputs() {
		shape := in.GetShape()
		if len(shape) < 1 || shape[0] != -1 {
			return nil, fmt.Errorf("input %q has shape %s: want a batch dimension first", in.GetName(), triton.FormatShape(shape))
		}
		m.inputs = append(m.inputs, samples.Input{Name: in.GetName(), Datatype: in.GetDatatype(), Shape: shape[1:]})
	}
	var names []string
	for _, o := range meta.GetOutputs() {
		names = append(names, o.GetName())
	}
	switch {
	case m.output == "" && len(names) == 1:
		m.output = names[0]
	case m.output == "":
		return nil, fmt.Errorf("has %d outputs (%s): name the one to use", len(names), strings.Join(names, ", "))
	default:
		found := false
		for _, n := range names {
			found = found || n == m.output
		}
		if !found {
			return nil, fmt.Errorf("has no output %q (it has %s)", m.output, strings.Join(names, ", "))
		}
	}
	cfg, err := t.Client.ModelConfig(ctx, ref.Name, ref.Version)
	if err != nil {
		return nil, err
	}
	m.maxBatch = int(cfg.GetMaxBatchSize())
	if m.maxBatch <= 0 {
		return nil, fmt.Errorf("does not batch (max_batch_size %d)", m.maxBatch)
	}
	t.mu.Lock()
	if t.models == nil {
		t.models = map[react.ModelRef]*servedModel{}
	}
	t.models[ref] = m
	t.mu.Unlock()
	return m, nil
}

// Run implements Models.
func (t *Triton) Run(ctx context.Context, ref react.ModelRef, in Samples) ([]float32, int, error) {
	out, cols, err := t.run(ctx, ref, in)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", describeRef(ref), err)
	}
	return out, cols, nil
}

func (t *Triton) run(ctx context.Context, ref react.ModelRef, in Samples) ([]float32, int, error) {
	m, err := t.resolve(ctx, ref)
	if err != nil {
		return nil, 0, err
	}
	specs := in.Specs()
	bind, err := samples.Bind(m.inputs, specs, "the samples")
	if err != nil {
		return nil, 0, err
	}
	n := in.Rows()
	if n == 0 {
		return nil, 0, errors.New("no samples")
	}
	batch := t.Batch
	if batch <= 0 {
		batch = DefaultBatch
	}
	batch = min(batch, m.maxBatch)
	inFlight := t.InFlight
	if inFlight <= 0 {
		inFlight = DefaultInFlight
	}
	parts := make([][]float32, (n+batch-1)/batch)
	colsOf := make([]int, len(parts))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(inFlight)
	for k := range parts {
		g.Go(func() error {
			lo, hi := k*batch, min(n, (k+1)*batch)
			raw, err := in.Read(span(lo, hi))
			if err != nil {
				return fmt.Errorf("samples %d to %d: %w", lo, hi-1, err)
			}
			inputs, err := bind.Tensors(specs, raw, hi-lo)
			if err != nil {
				return fmt.Errorf("samples %d to %d: %w", lo, hi-1, err)
			}
			resp, err := t.Client.Infer(gctx, &triton.InferRequest{Model: ref.Name, Version: ref.Version,
				Inputs: inputs, Outputs: []string{m.output}})
			if err != nil {
				return fmt.Errorf("samples %d to %d: %w", lo, hi-1, err)
			}
			o, ok := resp.Output(m.output)
			if !ok {
				return fmt.Errorf("samples %d to %d: no output %q in the response", lo, hi-1, m.output)
			}
			v, err := o.AsFloat32()
			if err != nil {
				return fmt.Errorf("samples %d to %d: output %q: %w", lo, hi-1, m.output, err)
			}
			if len(v)%(hi-lo) != 0 {
				return fmt.Errorf("samples %d to %d: output %q has %d values for %d samples", lo, hi-1, m.output, len(v), hi-lo)
			}
			parts[k], colsOf[k] = v, len(v)/(hi-lo)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, 0, err
	}
	cols := colsOf[0]
	out := make([]float32, 0, n*cols)
	for k, p := range parts {
		if colsOf[k] != cols {
			return nil, 0, fmt.Errorf("output %q has %d values per sample in one batch and %d in another", m.output, cols, colsOf[k])
		}
		out = append(out, p...)
	}
	return out, cols, nil
}
