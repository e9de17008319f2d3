package pipeline

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/grpc/metadata"

	"github.com/mergectl/react-triton/sidecar/pipeline/shadowcmp"
	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// ShadowMetrics counts the shadow comparisons (Options.Shadow): a
// prometheus.Collector, for the server to register once.
type ShadowMetrics = shadowcmp.Metrics

// NewShadowMetrics returns the shadow comparisons' metrics, all at zero.
func NewShadowMetrics() *ShadowMetrics { return shadowcmp.NewMetrics() }

// Close stops the shadow comparisons of the set's models: those in flight
// are cancelled (their Triton calls too) and Close returns once they have
// ended; a request the set's models serve afterwards starts none (it is
// counted as skipped, reason "stopped"). Requests themselves are not
// affected. The server calls it at shutdown, and on the set a reload
// replaces. It is safe to call more than once, and on a Set not built by
// Build.
func (s *Set) Close() {
	if s != nil && s.shadow != nil {
		s.shadow.Close()
	}
}

// shadowCmp is a model's part in its experiment's shadow comparison.
type shadowCmp struct {
	*shadowcmp.Comparer
	arms []shadowcmp.Arm // every arm of the experiment, in order
}

// setShadows gives the models of every experiment with a shadow
// comparison their part in it (nothing when opt.Shadow is nil).
func (b *builder) setShadows(set *Set) {
	for _, e := range b.cfg.Experiments {
		if b.opt.Shadow == nil || !e.Shadow.Enabled() {
			continue
		}
		if set.shadow == nil {
			set.shadow = shadowcmp.NewRun()
		}
		c := shadowcmp.NewComparer(set.shadow, b.opt.Shadow, e.Name, e.Shadow)
		for _, name := range e.Models {
			if m := set.Models[name]; m != nil {
				if pe := m.profile.Experiment(e.Name); pe != nil {
					m.shadow = &shadowCmp{Comparer: c, arms: shadowcmp.Arms(b.ctx, m.profile, pe)}
				}
			}
		}
	}
}

// startShadow draws a request served with arm and, when it is drawn,
// starts its comparison, with copies of what it needs, so that it may run
// after Infer has returned: the feature, the outgoing metadata of ctx
// (forwarded headers, trace context), the classes served.
func (m *Model) startShadow(ctx context.Context, up *Upstream, id, arm string, f feature, preds []Prediction, outs []output) {
	if !m.shadow.Draw() {
		return
	}
	if len(preds) == 0 {
		m.shadow.Skip(m.name, shadowcmp.ReasonNoPrediction)
		return
	}
	f = feature{datatype: f.datatype, shape: slices.Clone(f.shape), raw: slices.Clone(f.raw)}
	md, _ := metadata.FromOutgoingContext(ctx)
	tasks, served := make([]string, len(preds)), make([][]int, len(preds))
	for i, p := range preds {
		tasks[i], served[i] = p.Task, slices.Clone(p.Class)
	}
	m.shadow.Start(m.name, arm, func(ctx context.Context) ([]shadowcmp.Count, bool, error) {
		if md != nil {
			ctx = metadata.NewOutgoingContext(ctx, md)
		}
		return m.compareArms(ctx, up, id, arm, f, outs, tasks, served)
	})
}

// compareArms corrects the feature with each arm's W_p but the one served
// (arm), calls the heads of outs, and counts per arm and head (tasks[i]
// for outs[i]) the rows whose top-1 class is the one served (served[i]).
// partial reports an arm left out for want of a W_p.
func (m *Model) compareArms(ctx context.Context, up *Upstream, id, arm string, f feature, outs []output,
	tasks []string, served [][]int) (counts []shadowcmp.Count, partial bool, err error) {
	wanted := make([]wantedOutput, len(outs))
	for i, o := range outs {
		wanted[i] = wantedOutput{output: o}
	}
	in := &tritonpb.ModelInferRequest{Id: id}
	buf := getBuffers()
	defer putBuffers(buf)
	var logits []float32
	for _, a := range m.shadow.arms {
		if a.Name == arm {
			continue
		}
		if a.Err != nil {
			partial = true
			continue
		}
		enc, err := m.correct(buf, f, a.W)
		if err != nil {
			return nil, partial, err
		}
		answers, err := m.callHeads(ctx, up, in, nil, f, enc, wanted)
		if err != nil {
			return nil, partial, err
		}
		for i, o := range outs {
			t, err := triton.ResponseOutput(answers[o.head], o.name)
			if err == nil {
				logits, err = triton.DecodeFloat32(logits[:0], t.Datatype, t.Raw)
			}
			if err == nil && (len(t.Shape) == 0 || t.Shape[len(t.Shape)-1] < 1) {
				err = fmt.Errorf("shape %s has no classes", triton.FormatShape(t.Shape))
			}
			var c shadowcmp.Count
			if err == nil {
				p := top1(tasks[i], logits, int(t.Shape[len(t.Shape)-1]))
				c, err = shadowcmp.Agreement(a.Name, tasks[i], served[i], p.Class)
			}
			if err != nil {
				return nil, partial, fmt.Errorf("head %s output %q: %w", describe(m.heads[o.head].ref), o.name, err)
			}
			counts = append(counts, c)
		}
	}
	return counts, partial, nil
}
