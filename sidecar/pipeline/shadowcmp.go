package pipeline

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// The shadow comparison of an experiment's arms (experiments[].shadow):
// for a share of the requests served with an arm, once Infer has its
// answer, a goroutine corrects a copy of the same backbone feature with
// every other arm's W_p, calls the heads once per other arm, and counts
// per pair of arms and head the rows whose top-1 class agrees with the
// served one (ShadowMetrics). The client's response is built before and
// never waits for it. Only the explicit form is compared: a graph-form
// model's steps after the corrected tensor are not heads the sidecar
// knows, so its requests drawn are counted as skipped (skipGraph).

// Why a drawn request was not compared, or not in full: the reason label
// of react_experiment_shadow_skipped_total.
const (
	skipBusy         = "busy"          // every slot of the experiment was taken
	skipGraph        = "graph_form"    // the model is of the graph form
	skipNoPrediction = "no_prediction" // the client asked for no logits to compare
	skipNoMatrix     = "no_matrix"     // an other arm had no W_p: the rest were compared
	skipTimeout      = "timeout"       // the comparison ran past shadow.timeout
	skipStopped      = "stopped"       // Set.Close: shutdown or reload
	skipError        = "error"         // a head call failed, or answered what cannot be compared
)

// shadowRun is what the comparisons of one Set share: the context Close
// cancels, and the comparisons in flight Close waits for.
type shadowRun struct {
	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

func newShadowRun() *shadowRun {
	ctx, cancel := context.WithCancel(context.Background())
	return &shadowRun{ctx: ctx, cancel: cancel}
}

// add counts a comparison in, or reports false once the run is closed.
func (r *shadowRun) add() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.wg.Add(1)
	return true
}

// close cancels the comparisons in flight and waits for them to end.
func (r *shadowRun) close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()
}

// Close stops the shadow comparisons of the set's models: those in flight
// are cancelled (their Triton calls too) and Close returns once they have
// ended; a request the set's models serve afterwards starts none (it is
// counted as skipped, reason "stopped"). Requests themselves are not
// affected. The server calls it at shutdown and on the set a reload
// replaces. It is safe to call more than once, and on a Set not built by
// Build.
func (s *Set) Close() {
	if s != nil && s.shadow != nil {
		s.shadow.close()
	}
}

// shadowCmp is a model's part in its experiment's shadow comparison.
type shadowCmp struct {
	run        *shadowRun
	metrics    *ShadowMetrics
	experiment string
	fraction   float64
	timeout    time.Duration
	// slots holds a token per comparison in flight; its capacity is
	// shadow.max_concurrent, shared by the experiment's models.
	slots chan struct{}
	// arms are every arm of the experiment, in configuration order.
	arms []armMatrix
}

// armMatrix is an arm's W_p (nil: no correction), or why it has none.
type armMatrix struct {
	name string
	w    *control.Matrix
	err  error
}

// setShadows gives the models of every experiment with a shadow
// comparison their part in it (nothing when opt.Shadow is nil).
func (b *builder) setShadows(set *Set) {
	if b.opt.Shadow == nil {
		return
	}
	for _, e := range b.cfg.Experiments {
		if !e.Shadow.Enabled() {
			continue
		}
		if set.shadow == nil {
			set.shadow = newShadowRun()
		}
		sh := e.Shadow.Effective()
		slots := make(chan struct{}, sh.MaxConcurrent)
		for _, name := range e.Models {
			m := set.Models[name]
			if m == nil {
				continue
			}
			m.shadow = &shadowCmp{run: set.shadow, metrics: b.opt.Shadow, experiment: e.Name,
				fraction: sh.Fraction, timeout: sh.Timeout, slots: slots, arms: b.armMatrices(m.profile, e.Arms)}
		}
	}
}

// armMatrices returns each arm's W_p, which the profile pinned when it was
// built: each is found, never solved. An arm's choice is made as the
// profile made it: its preference, or its preset's, parsed (ParseSpec).
func (b *builder) armMatrices(p *control.Profile, arms []config.Arm) []armMatrix {
	var presets map[string]string
	for _, c := range b.cfg.Components {
		if c.Name == p.Name() {
			presets = c.Presets
		}
	}
	out := make([]armMatrix, len(arms))
	for i, a := range arms {
		out[i].name = a.Name
		spec := a.Preference
		if a.Preset != "" {
			spec = presets[a.Preset]
		}
		c, err := control.ParseSpec(spec, p.Tasks())
		if err == nil {
			out[i].w, err = p.Matrix(b.ctx, c)
		}
		if err != nil {
			out[i].err = fmt.Errorf("arm %q: %w", a.Name, err)
		}
	}
	return out
}

// comparison is one drawn request's comparison: what it needs once Infer
// has returned and the request's buffers are gone.
type comparison struct {
	m   *Model
	up  *Upstream
	md  metadata.MD // the outgoing metadata of the request's calls
	id  string
	arm string  // the arm served
	f   feature // a copy
	// served are the client's predictions.
	served []servedClasses
}

// servedClasses are the top-1 classes a head's output (out) gave the client.
type servedClasses struct {
	task  string
	out   output
	class []int
}

// drawn reports whether a request is drawn for comparison.
func (c *shadowCmp) drawn() bool { return rand.Float64() < c.fraction }

// skipGraph counts a graph-form request drawn, which is not compared.
func (c *shadowCmp) skipGraph(m *Model) {
	if c.drawn() {
		c.metrics.skipped(m.name, c.experiment, skipGraph)
	}
}

// start draws the request served with arm and, if it is drawn and a slot
// is free, starts its comparison in the background. It copies what the
// comparison needs, so that it may run after Infer has returned.
func (c *shadowCmp) start(ctx context.Context, m *Model, up *Upstream, id, arm string, f feature, preds []Prediction, outs []output) {
	if !c.drawn() {
		return
	}
	if len(preds) == 0 {
		c.metrics.skipped(m.name, c.experiment, skipNoPrediction)
		return
	}
	select {
	case c.slots <- struct{}{}:
	default:
		c.metrics.skipped(m.name, c.experiment, skipBusy)
		return
	}
	if !c.run.add() {
		<-c.slots
		c.metrics.skipped(m.name, c.experiment, skipStopped)
		return
	}
	job := &comparison{m: m, up: up, id: id, arm: arm,
		f: feature{datatype: f.datatype, shape: slices.Clone(f.shape), raw: slices.Clone(f.raw)}}
	if md, ok := metadata.FromOutgoingContext(ctx); ok {
		job.md = md.Copy()
	}
	for i, p := range preds {
		job.served = append(job.served, servedClasses{task: p.Task, out: outs[i], class: slices.Clone(p.Class)})
	}
	c.metrics.inflight(m.name, c.experiment, 1)
	go func() {
		defer c.run.wg.Done()
		defer func() { <-c.slots }()
		defer c.metrics.inflight(m.name, c.experiment, -1)
		c.compare(job)
	}()
}

// pairCount is what one comparison counts for one other arm and head.
type pairCount struct {
	other, task  string
	rows, agreed int
}

// compare runs a comparison, bounded by the timeout and cancelled by
// Close, and counts it: in full, or as skipped with the reason it stopped.
func (c *shadowCmp) compare(job *comparison) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(c.run.ctx, c.timeout)
	defer cancel()
	if job.md != nil {
		ctx = metadata.NewOutgoingContext(ctx, job.md)
	}
	counts, missing, err := c.counts(ctx, job)
	m := job.m
	switch {
	case err == nil:
		c.metrics.compared(m.name, c.experiment, job.arm, counts, time.Since(start))
		if missing {
			c.metrics.skipped(m.name, c.experiment, skipNoMatrix)
		}
	case c.run.ctx.Err() != nil:
		c.metrics.skipped(m.name, c.experiment, skipStopped)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		c.metrics.skipped(m.name, c.experiment, skipTimeout)
	default:
		c.metrics.skipped(m.name, c.experiment, skipError)
	}
}

// counts corrects the feature with each other arm's W_p, calls the heads
// the client's predictions came from, and compares their top-1 classes
// with the served ones, row by row. missing reports an arm left out for
// want of a W_p.
func (c *shadowCmp) counts(ctx context.Context, job *comparison) (counts []pairCount, missing bool, err error) {
	m := job.m
	wanted := make([]wantedOutput, len(job.served))
	for i, s := range job.served {
		wanted[i] = wantedOutput{output: s.out}
	}
	in := &tritonpb.ModelInferRequest{Id: job.id}
	buf := getBuffers()
	defer putBuffers(buf)
	var logits []float32
	for _, a := range c.arms {
		if a.name == job.arm {
			continue
		}
		if a.err != nil {
			missing = true
			continue
		}
		enc, err := m.correct(buf, job.f, a.w)
		if err != nil {
			return nil, missing, err
		}
		answers, err := m.callHeads(ctx, job.up, in, nil, job.f, enc, wanted)
		if err != nil {
			return nil, missing, err
		}
		for _, s := range job.served {
			t, err := outputTensor(answers[s.out.head], s.out.name)
			if err != nil {
				return nil, missing, err
			}
			if logits, err = triton.DecodeFloat32(logits[:0], t.Datatype, t.Raw); err != nil {
				return nil, missing, err
			}
			rows := len(s.class)
			if len(t.Shape) == 0 || t.Shape[len(t.Shape)-1] < 1 || int64(len(logits)) != int64(rows)*t.Shape[len(t.Shape)-1] {
				return nil, missing, fmt.Errorf("head %s: output %q of shape %s for %d rows", describe(m.heads[s.out.head].ref), s.out.name, triton.FormatShape(t.Shape), rows)
			}
			classes := len(logits) / rows
			pc := pairCount{other: a.name, task: s.task, rows: rows}
			for r, served := range s.class {
				if argmax(logits[r*classes:(r+1)*classes]) == served {
					pc.agreed++
				}
			}
			counts = append(counts, pc)
		}
	}
	return counts, missing, nil
}
