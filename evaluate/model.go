package evaluate

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/triton"
)

// Models runs served models on batches of inputs: the backbones and experts
// on a task's inputs, the heads on (corrected) features.
type Models interface {
	// Run returns the output of model for the n = len(x)/size(shape)
	// inputs in x, each of shape (without the batch dimension), as n rows
	// of cols float32 values.
	Run(ctx context.Context, model react.ModelRef, x []float32, shape []int64) (out []float32, cols int, err error)
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
	input, inputDT, output string
	maxBatch               int
}

// describeRef names a model for messages.
func describeRef(m react.ModelRef) string {
	if m.Version == "" {
		return fmt.Sprintf("model %q", m.Name)
	}
	return fmt.Sprintf("model %q version %s", m.Name, m.Version)
}

// resolve checks a model once: ready, one FP32 or FP16 input, and the
// output ref.Output or else its only output.
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
	if len(meta.GetInputs()) != 1 {
		return nil, fmt.Errorf("has %d inputs: want one", len(meta.GetInputs()))
	}
	in := meta.GetInputs()[0]
	m = &servedModel{input: in.GetName(), inputDT: in.GetDatatype(), output: ref.Output}
	if m.inputDT != triton.FP32 && m.inputDT != triton.FP16 {
		return nil, fmt.Errorf("input %q is %s: want FP32 or FP16", m.input, m.inputDT)
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
func (t *Triton) Run(ctx context.Context, ref react.ModelRef, x []float32, shape []int64) ([]float32, int, error) {
	out, cols, err := t.run(ctx, ref, x, shape)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", describeRef(ref), err)
	}
	return out, cols, nil
}

func (t *Triton) run(ctx context.Context, ref react.ModelRef, x []float32, shape []int64) ([]float32, int, error) {
	m, err := t.resolve(ctx, ref)
	if err != nil {
		return nil, 0, err
	}
	size := 1
	for _, d := range shape {
		size *= int(d)
	}
	if size == 0 || len(x)%size != 0 {
		return nil, 0, fmt.Errorf("%d values are not a whole number of inputs of shape %v", len(x), shape)
	}
	n := len(x) / size
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
			bshape := append([]int64{int64(hi - lo)}, shape...)
			var in triton.Tensor
			if m.inputDT == triton.FP16 {
				in = triton.NewFP16(m.input, bshape, x[lo*size:hi*size])
			} else {
				in = triton.NewFP32(m.input, bshape, x[lo*size:hi*size])
			}
			resp, err := t.Client.Infer(gctx, &triton.InferRequest{Model: ref.Name, Version: ref.Version,
				Inputs: []triton.Tensor{in}, Outputs: []string{m.output}})
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
