// Package shadowcmp runs the shadow comparison of an experiment's arms
// (experiments[].shadow, issue 25): for a share of the requests served
// with an arm, once the request is answered, the same backbone feature is
// corrected with every other arm's W_p and sent to the heads, and the rows
// whose top-1 class agrees with the one served are counted per pair of
// arms and head (Metrics): a signal without labels, there from the first
// request.
//
// The package holds what does not depend on how a comparison calls
// Triton: the draw, the cap on comparisons in flight (a Comparer per
// experiment), their bound in time and their cancellation (a Run per
// built configuration), the arms' W_p (Arms), and the counting of every
// outcome. Package sidecar/pipeline gives each comparison's work as a
// function.
package shadowcmp

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/sidecar/config"
)

// Why a request drawn was not compared, or not in full: the reason label
// of MetricSkipped.
const (
	ReasonBusy         = "busy"          // every slot of the experiment was taken
	ReasonGraphForm    = "graph_form"    // the model is of the graph form
	ReasonNoPrediction = "no_prediction" // the client asked for no logits to compare
	ReasonNoMatrix     = "no_matrix"     // an arm had no W_p: the others were compared
	ReasonTimeout      = "timeout"       // the comparison ran past its timeout
	ReasonStopped      = "stopped"       // Run.Close: shutdown or reload
	ReasonError        = "error"         // a call failed, or answered what cannot be compared
)

// Run is what the comparisons of one built configuration share: the
// context Close cancels, and the comparisons in flight Close waits for.
type Run struct {
	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// NewRun returns a Run with nothing in flight.
func NewRun() *Run {
	ctx, cancel := context.WithCancel(context.Background())
	return &Run{ctx: ctx, cancel: cancel}
}

// add counts a comparison in, or reports false once the run is closed.
func (r *Run) add() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.wg.Add(1)
	return true
}

// Close cancels the comparisons in flight and returns once they have
// ended; none starts afterwards. It may be called more than once.
func (r *Run) Close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()
}

// Wait returns once no comparison is in flight. None may start meanwhile:
// it is for tests and benchmarks, which start none while they wait.
func (r *Run) Wait() { r.wg.Wait() }

// Comparer is an experiment's shadow comparison in one Run, shared by its
// models: the draw, and the slots of the comparisons in flight.
type Comparer struct {
	run        *Run
	metrics    *Metrics
	experiment string
	fraction   float64
	timeout    time.Duration
	// slots holds a token per comparison in flight; its capacity is
	// shadow.max_concurrent.
	slots chan struct{}
}

// NewComparer returns the comparer of an experiment whose shadow
// comparison is s (its defaults are applied), in run, counted in m.
func NewComparer(run *Run, m *Metrics, experiment string, s config.Shadow) *Comparer {
	s = s.Effective()
	return &Comparer{run: run, metrics: m, experiment: experiment, fraction: s.Fraction, timeout: s.Timeout,
		slots: make(chan struct{}, s.MaxConcurrent)}
}

// Draw reports whether a request served with an arm is compared: at
// random, with the comparison's fraction, independently of the request.
func (c *Comparer) Draw() bool { return rand.Float64() < c.fraction }

// Skip counts a request of model that was drawn and not compared.
func (c *Comparer) Skip(model, reason string) { c.metrics.skipped(model, c.experiment, reason) }

// Count is what a comparison found for one other arm and head: of Rows
// rows, Agreed had the top-1 class served.
type Count struct {
	Other, Task  string
	Rows, Agreed int
}

// Agreement counts, for the arm other and a head's task, the rows whose
// top-1 class under other (got) is the one served.
func Agreement(other, task string, served, got []int) (Count, error) {
	if len(got) != len(served) {
		return Count{}, fmt.Errorf("%d rows, %d served", len(got), len(served))
	}
	c := Count{Other: other, Task: task, Rows: len(served)}
	for r, class := range served {
		if got[r] == class {
			c.Agreed++
		}
	}
	return c, nil
}

// Compare is a comparison's work: it returns its counts, partial when an
// arm was left out for want of a W_p (the others counted), or why it
// failed. It must return soon once ctx ends.
type Compare func(ctx context.Context) (counts []Count, partial bool, err error)

// Start starts the comparison of a request of model served with arm, in
// the background, if one of the experiment's slots is free (else it is
// counted as busy) and the run is not closed (else as stopped). compare
// runs with a context bounded by the timeout and cancelled by Run.Close;
// its outcome is counted: in full, or as skipped by the reason it ended.
// Start reports whether it started compare.
func (c *Comparer) Start(model, arm string, compare Compare) bool {
	select {
	case c.slots <- struct{}{}:
	default:
		c.Skip(model, ReasonBusy)
		return false
	}
	if !c.run.add() {
		<-c.slots
		c.Skip(model, ReasonStopped)
		return false
	}
	c.metrics.inflight(model, c.experiment, 1)
	go func() {
		defer c.run.wg.Done()
		defer func() { <-c.slots }()
		defer c.metrics.inflight(model, c.experiment, -1)
		c.do(model, arm, compare)
	}()
	return true
}

// do runs compare and counts its outcome. A comparison that finished is
// counted in full even when the run was closed meanwhile.
func (c *Comparer) do(model, arm string, compare Compare) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(c.run.ctx, c.timeout)
	defer cancel()
	counts, partial, err := compare(ctx)
	switch {
	case err == nil:
		c.metrics.compared(model, c.experiment, arm, counts, time.Since(start))
		if partial {
			c.Skip(model, ReasonNoMatrix)
		}
	case c.run.ctx.Err() != nil:
		c.Skip(model, ReasonStopped)
	case timedOut(ctx, err):
		c.Skip(model, ReasonTimeout)
	default:
		c.Skip(model, ReasonError)
	}
}

// timedOut reports whether a comparison that failed with err ran out of
// its time. The context's own error is not enough: a gRPC call that finds
// the deadline already passed fails with DeadlineExceeded before the
// context's timer has fired (seen under load on two cores, CI on 2476b4d).
func timedOut(ctx context.Context, err error) bool {
	return errors.Is(ctx.Err(), context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded
}

// Arm is an experiment's arm as a comparison needs it: its W_p (nil: no
// correction), or why it has none.
type Arm struct {
	Name string
	W    *control.Matrix
	Err  error
}

// Arms returns the W_p of each of an experiment's arms, in order, from
// the profile that pinned them when it was built: each arm's choice is
// the experiment's (control.Experiment.Choices, a preset arm's its
// preset's), and its W_p is found, never solved.
func Arms(ctx context.Context, p *control.Profile, e *control.Experiment) []Arm {
	choices := e.Choices()
	out := make([]Arm, len(choices))
	for i, c := range choices {
		out[i].Name = c.Arm
		w, err := p.Matrix(ctx, c)
		if err != nil {
			err = fmt.Errorf("arm %q: %w", c.Arm, err)
		}
		out[i].W, out[i].Err = w, err
	}
	return out
}
