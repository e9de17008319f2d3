package sampling

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mergectl/react-triton/livestats"
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// resolve reads from Triton's metadata the backbone's and each expert's
// feature output (the only output when the configuration leaves it out)
// and the feature's dimension, the last of its shape, which must be the
// same for all. While a model's metadata cannot be read it tries again,
// until ctx ends.
func (s *Sampler) resolve(ctx context.Context, set livestats.Settings) (backbone target, experts map[string]target, d int, err error) {
	delay := 250 * time.Millisecond
	for {
		backbone, experts, d, err = s.resolveOnce(ctx, set)
		var bad *badModel
		if err == nil || errors.As(err, &bad) {
			return backbone, experts, d, err
		}
		select {
		case <-ctx.Done():
			return target{}, nil, 0, fmt.Errorf("sampling: %w (gave up: %v)", err, context.Cause(ctx))
		case <-time.After(delay):
		}
		delay = min(2*delay, 2*time.Second)
	}
}

// badModel is a model whose metadata was read and does not fit: trying
// again does not help.
type badModel struct{ msg string }

func (e *badModel) Error() string { return e.msg }

func (s *Sampler) resolveOnce(ctx context.Context, set livestats.Settings) (backbone target, experts map[string]target, d int, err error) {
	backbone, d, err = s.feature(ctx, "sampling.backbone", set.Backbone)
	if err != nil {
		return target{}, nil, 0, err
	}
	experts = make(map[string]target, len(set.Tasks))
	for i, t := range set.Tasks {
		e, de, err := s.feature(ctx, fmt.Sprintf("sampling.tasks[%d].expert", i), t.Expert)
		if err != nil {
			return target{}, nil, 0, err
		}
		if de != d {
			return target{}, nil, 0, &badModel{fmt.Sprintf("sampling: sampling.tasks[%d].expert: model %q output %q has %d values per row, the backbone's %d", i, e.model, e.output, de, d)}
		}
		experts[t.Name] = e
	}
	return backbone, experts, d, nil
}

// feature resolves one model's feature output and its dimension.
func (s *Sampler) feature(ctx context.Context, path string, ref react.ModelRef) (target, int, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	md, err := s.rpc.ModelMetadata(cctx, &tritonpb.ModelMetadataRequest{Name: ref.Name, Version: ref.Version})
	if err != nil {
		return target{}, 0, fmt.Errorf("sampling: %s: model %q: %w", path, ref.Name, err)
	}
	outs := md.GetOutputs()
	var out *tritonpb.ModelMetadataResponse_TensorMetadata
	switch {
	case ref.Output == "" && len(outs) == 1:
		out = outs[0]
	case ref.Output == "":
		return target{}, 0, &badModel{fmt.Sprintf("sampling: %s: model %q has %d outputs: name the feature's (output)", path, ref.Name, len(outs))}
	default:
		for _, o := range outs {
			if o.GetName() == ref.Output {
				out = o
			}
		}
		if out == nil {
			return target{}, 0, &badModel{fmt.Sprintf("sampling: %s: model %q has no output %q", path, ref.Name, ref.Output)}
		}
	}
	switch out.GetDatatype() {
	case "FP32", "FP16", "BF16", "FP64":
	default:
		return target{}, 0, &badModel{fmt.Sprintf("sampling: %s: model %q output %q is %s, not a floating-point feature", path, ref.Name, out.GetName(), out.GetDatatype())}
	}
	shape := out.GetShape()
	if len(shape) == 0 || shape[len(shape)-1] <= 0 {
		return target{}, 0, &badModel{fmt.Sprintf("sampling: %s: model %q output %q has shape %v: want a fixed last dimension, the feature's", path, ref.Name, out.GetName(), shape)}
	}
	return target{model: ref.Name, version: ref.Version, output: out.GetName()}, int(shape[len(shape)-1]), nil
}
