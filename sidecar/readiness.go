package sidecar

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/sidecar/passthrough"
	"github.com/mergectl/react-triton/sidecar/pipeline"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// readinessTTL is how long a readiness answer is reused: a probe, or a
// client polling /v2/health/ready, costs Triton one ModelReady call per
// model the controllable models need at most this often.
const readinessTTL = time.Second

// readinessTimeout bounds one readiness check's calls to Triton.
const readinessTimeout = 5 * time.Second

// readiness is the sidecar's own readiness: its controllable models built,
// and every model they call (backbones and heads) ready on Triton, checked
// at each probe (at most once a second), so that a head unloaded after
// start-up takes the sidecar out of service, and bringing it back puts the
// sidecar back.
type readiness struct {
	ms *Models

	mu      sync.Mutex
	at      time.Time // when last was computed
	set     *pipeline.Set
	last    error         // nil: ready
	pending chan struct{} // closed when the check in flight ends; nil when none
	logged  string        // the last reason logged, so that a change is logged once
}

// notReadyError says why the sidecar is not ready.
type notReadyError struct{ msg string }

func (e *notReadyError) Error() string { return e.msg }

// check returns nil when the sidecar is ready, and a *notReadyError or an
// upstream error otherwise. Concurrent callers share one check.
func (r *readiness) check(ctx context.Context) error {
	st := r.ms.state.Load()
	if st.set == nil {
		return &notReadyError{"sidecar: the controllable models are not loaded yet"}
	}
	r.mu.Lock()
	for {
		if r.set == st.set && time.Since(r.at) < readinessTTL {
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

	err := r.ms.partsReady(context.WithoutCancel(ctx), "")

	r.mu.Lock()
	r.set, r.at, r.last, r.pending = st.set, time.Now(), err, nil
	r.logChange(err)
	r.mu.Unlock()
	close(done)
	if r.ms.metrics != nil {
		r.ms.metrics.Ready(err == nil)
	}
	return err
}

// logChange logs the readiness when its reason changed. r.mu is held.
func (r *readiness) logChange(err error) {
	reason := ""
	if err != nil {
		reason = err.Error()
	}
	if reason == r.logged {
		return
	}
	r.logged = reason
	if err != nil {
		r.ms.log.Warn("not ready", "reason", reason)
	} else {
		r.ms.log.Info("ready again: every model the controllable models call is ready on Triton")
	}
}

// partsReady asks Triton whether every model that the built controllable
// models call is ready (only model's when model is not ""). It returns nil,
// a *notReadyError naming the first controllable model with a part that is
// not ready, or an upstream error.
func (ms *Models) partsReady(ctx context.Context, model string) error {
	type part struct{ name, version string }
	needed := map[part][]string{} // part → the controllable models that call it
	var order []part
	for _, m := range ms.all() {
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
	ctx, cancel := context.WithTimeout(ctx, readinessTimeout)
	defer cancel()
	ready := make([]bool, len(order))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, p := range order {
		g.Go(func() error {
			r, err := ms.rpc.ModelReady(gctx, &tritonpb.ModelReadyRequest{Name: p.name, Version: p.version})
			switch {
			case status.Code(err) == codes.NotFound:
			case err != nil:
				return ms.upstreamError(err)
			default:
				ready[i] = r.GetReady()
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
		return &notReadyError{fmt.Sprintf("sidecar: controllable model %s: a model it calls is not ready on Triton", quoteAll(missing))}
	}
	return &notReadyError{fmt.Sprintf("sidecar: controllable models %s: a model they call is not ready on Triton", quoteAll(missing))}
}

// quoteAll quotes names and joins them with commas.
func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// httpServerReady answers GET /v2/health/ready: 503 with the reason while
// the sidecar is not ready, else Triton's own answer.
func (ms *Models) httpServerReady(pass http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := ms.readiness.check(r.Context()); err != nil {
			passthrough.WriteHTTPError(w, http.StatusServiceUnavailable, err.Error())
			return
		}
		pass.ServeHTTP(w, r)
	})
}

// ReadyzHandler answers /readyz for the metrics listener: 200 when the
// sidecar is ready and Triton says it is, 503 with the reason otherwise.
// It is the readiness probe to use when the client listeners ask for
// client certificates, which a kubelet does not have.
func (ms *Models) ReadyzHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		err := ms.readiness.check(r.Context())
		if err == nil {
			ctx, cancel := context.WithTimeout(r.Context(), readinessTimeout)
			defer cancel()
			resp, rerr := ms.rpc.ServerReady(ctx, &tritonpb.ServerReadyRequest{})
			switch {
			case rerr != nil:
				err = fmt.Errorf("sidecar: Triton's readiness: %s", status.Convert(ms.upstreamError(rerr)).Message())
			case !resp.GetReady():
				err = fmt.Errorf("sidecar: Triton is not ready")
			}
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, err.Error())
			return
		}
		w.Write([]byte("ok\n"))
	})
}

// partGoneError is the UNAVAILABLE status of a request for a controllable
// model one of whose parts Triton no longer serves (unloaded, or not
// ready): HTTP answers it 503, where an unreachable Triton is 502.
type partGoneError struct{ st *status.Status }

func (e *partGoneError) Error() string              { return e.st.Err().Error() }
func (e *partGoneError) GRPCStatus() *status.Status { return e.st }

// partGone turns the NOT_FOUND a request for model m got from Triton into
// UNAVAILABLE when a model m calls is not ready there (unloaded after
// start-up), and returns any other error as it is (a NOT_FOUND of m's own,
// such as a version it does not have).
func (ms *Models) partGone(ctx context.Context, m *pipeline.Model, err error) error {
	if status.Code(err) != codes.NotFound {
		return err
	}
	var nr *notReadyError
	if perr := ms.partsReady(context.WithoutCancel(ctx), m.Name()); !errors.As(perr, &nr) {
		return err
	}
	return &partGoneError{status.Newf(codes.Unavailable, "sidecar: model %q is unavailable: a model it calls is not ready on Triton (%s)", m.Name(), status.Convert(err).Message())}
}
