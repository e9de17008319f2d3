package readiness

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/sidecar/pipeline"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// TTL is how long a readiness answer is reused: a probe, or a client
// polling /v2/health/ready, costs Triton one ModelReady call per model the
// controllable models need at most this often.
const TTL = time.Second

// Timeout bounds one readiness check's calls to Triton.
const Timeout = 5 * time.Second

// Checker is the sidecar's own readiness: its controllable models built,
// and every model they call (backbones and heads) ready on Triton, checked
// at each probe (at most once a second), so that a head unloaded after
// start-up takes the sidecar out of service, and bringing it back puts the
// sidecar back.
type Checker struct {
	rpc tritonpb.GRPCInferenceServiceClient
	// upstreamError words an error of Triton's as clients may see it.
	upstreamError func(error) error
	log           *slog.Logger
	// observe, when not nil, is told the outcome of every check (metrics).
	observe func(ready bool)

	mu      sync.Mutex
	at      time.Time // when last was computed
	set     *pipeline.Set
	last    error         // nil: ready
	pending chan struct{} // closed when the check in flight ends; nil when none
	logged  string        // the last reason logged, so that a change is logged once
}

// New returns a checker that asks Triton through rpc. upstreamError words
// Triton's errors as clients may see them; log gets each change of the
// readiness; observe, when not nil, the outcome of every check.
func New(rpc tritonpb.GRPCInferenceServiceClient, upstreamError func(error) error, log *slog.Logger, observe func(ready bool)) *Checker {
	return &Checker{rpc: rpc, upstreamError: upstreamError, log: log, observe: observe}
}

// NotReadyError says why the sidecar is not ready.
type NotReadyError struct{ msg string }

// Error says why the sidecar is not ready.
func (e *NotReadyError) Error() string { return e.msg }

// Check returns nil when the sidecar is ready, and a *NotReadyError or an
// upstream error otherwise. set is the set of controllable models in
// service, nil while none is built; models returns its models, in
// configuration order. An answer is reused for TTL while set serves, and
// concurrent callers share one check.
func (r *Checker) Check(ctx context.Context, set *pipeline.Set, models func() []*pipeline.Model) error {
	if set == nil {
		return &NotReadyError{"sidecar: the controllable models are not loaded yet"}
	}
	r.mu.Lock()
	for {
		if r.set == set && time.Since(r.at) < TTL {
			err := r.last
			r.mu.Unlock()
			return err
		}
		if r.pending == nil {
			break
		}
		wait := r.pending
		r.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		}
		r.mu.Lock()
	}
	done := make(chan struct{})
	r.pending = done
	r.mu.Unlock()

	err := r.PartsReady(context.WithoutCancel(ctx), models(), "")

	r.mu.Lock()
	r.set, r.at, r.last, r.pending = set, time.Now(), err, nil
	r.logChange(err)
	r.mu.Unlock()
	close(done)
	if r.observe != nil {
		r.observe(err == nil)
	}
	return err
}

// logChange logs the readiness when its reason changed. r.mu is held.
func (r *Checker) logChange(err error) {
	reason := ""
	if err != nil {
		reason = err.Error()
	}
	if reason == r.logged {
		return
	}
	r.logged = reason
	if err != nil {
		r.log.Warn("not ready", "reason", reason)
	} else {
		r.log.Info("ready again: every model the controllable models call is ready on Triton")
	}
}

// PartsReady asks Triton whether every model that the built controllable
// models call is ready (only model's when model is not ""). It returns nil,
// a *NotReadyError naming the first controllable model with a part that is
// not ready, or an upstream error.
func (r *Checker) PartsReady(ctx context.Context, models []*pipeline.Model, model string) error {
	type part struct{ name, version string }
	needed := map[part][]string{} // part → the controllable models that call it
	var order []part
	for _, m := range models {
		if model != "" && m.Name() != model {
			continue
		}
		names, versions := m.Dependencies()
		for i := range names {
			p := part{names[i], versions[i]}
			if _, ok := needed[p]; !ok {
				order = append(order, p)
			}
			needed[p] = append(needed[p], m.Name())
		}
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	ready := make([]bool, len(order))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, p := range order {
		g.Go(func() error {
			resp, err := r.rpc.ModelReady(gctx, &tritonpb.ModelReadyRequest{Name: p.name, Version: p.version})
			switch {
			case status.Code(err) == codes.NotFound:
			case err != nil:
				return r.upstreamError(err)
			default:
				ready[i] = resp.GetReady()
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	var missing []string
	for i, p := range order {
		if !ready[i] {
			for _, m := range needed[p] {
				if !slices.Contains(missing, m) {
					missing = append(missing, m)
				}
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if len(missing) == 1 {
		return &NotReadyError{fmt.Sprintf("sidecar: controllable model %s: a model it calls is not ready on Triton", quoteAll(missing))}
	}
	return &NotReadyError{fmt.Sprintf("sidecar: controllable models %s: a model they call is not ready on Triton", quoteAll(missing))}
}

// quoteAll quotes names and joins them with commas.
func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}
