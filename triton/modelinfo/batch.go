package modelinfo

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sync/errgroup"

	"github.com/mergectl/react-triton/triton"
)

// Defaults of the batched runs of calibrate fit and calibrate eval: their
// flags' defaults, and what a zero in BatchOptions means.
const (
	// DefaultBatch is the number of samples per request when neither the
	// caller nor the model asks for fewer.
	DefaultBatch = 256
	// DefaultInFlight is the number of requests (for a fit, chunks of a
	// task) in flight at once.
	DefaultInFlight = 4
)

// BatchOptions say how samples are cut into requests.
type BatchOptions struct {
	// Batch caps the samples per request; 0 means DefaultBatch. The
	// models' max_batch_size caps it further.
	Batch int
	// InFlight is the number of requests in flight at once; 0 means
	// DefaultInFlight.
	InFlight int
}

// BatchSize returns the samples per request for models whose
// max_batch_size is maxBatch (0: not known, no cap): o.Batch, or
// DefaultBatch, capped by each one above 0.
func (o BatchOptions) BatchSize(maxBatch ...int) int {
	b := o.Batch
	if b <= 0 {
		b = DefaultBatch
	}
	for _, m := range maxBatch {
		if m > 0 {
			b = min(b, m)
		}
	}
	return b
}

// Parallel returns the number of requests in flight at once: o.InFlight,
// or DefaultInFlight.
func (o BatchOptions) Parallel() int {
	if o.InFlight <= 0 {
		return DefaultInFlight
	}
	return o.InFlight
}

// RunBatched runs model (resolved by Resolve) on c with n samples in
// requests of at most o.BatchSize(model's max_batch_size) samples,
// o.Parallel() of them in flight at once, and returns its output output
// for every sample, decoded to float32 and in order, with the number of
// values per sample. inputs builds the tensors of samples [lo, hi). The
// first failure cancels the requests in flight; its error names the
// samples.
func RunBatched(ctx context.Context, c *triton.Client, model *Info, output string, n int, o BatchOptions,
	inputs func(lo, hi int) ([]triton.Tensor, error)) (out []float32, cols int, err error) {
	if n <= 0 {
		return nil, 0, errors.New("no samples")
	}
	batch := o.BatchSize(model.MaxBatchSize())
	parts := make([][]float32, (n+batch-1)/batch)
	colsOf := make([]int, len(parts))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(o.Parallel())
	for k := range parts {
		g.Go(func() error {
			lo, hi := k*batch, min(n, (k+1)*batch)
			fail := func(err error) error { return fmt.Errorf("samples %d to %d: %w", lo, hi-1, err) }
			in, err := inputs(lo, hi)
			if err != nil {
				return fail(err)
			}
			resp, err := c.Infer(gctx, &triton.InferRequest{Model: model.Name, Version: model.Version, Inputs: in, Outputs: []string{output}})
			if err != nil {
				return fail(err)
			}
			if parts[k], colsOf[k], err = resp.Rows(output, hi-lo); err != nil {
				return fail(err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, 0, err
	}
	cols = colsOf[0]
	out = make([]float32, 0, n*cols)
	for k, p := range parts {
		if colsOf[k] != cols {
			return nil, 0, fmt.Errorf("output %q has %d values per sample in one batch and %d in another", output, cols, colsOf[k])
		}
		out = append(out, p...)
	}
	return out, cols, nil
}
