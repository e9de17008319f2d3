package controllable

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/problem"
	"github.com/mergectl/react-triton/sidecar/backendmode"
	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/config/memory"
	"github.com/mergectl/react-triton/sidecar/limits"
	"github.com/mergectl/react-triton/sidecar/metrics"
	"github.com/mergectl/react-triton/sidecar/modelstats"
	"github.com/mergectl/react-triton/sidecar/outcomes"
	"github.com/mergectl/react-triton/sidecar/passthrough"
	"github.com/mergectl/react-triton/sidecar/pipeline"
	"github.com/mergectl/react-triton/sidecar/readiness"
	"github.com/mergectl/react-triton/sidecar/sampling"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// Models serves the controllable models of the configuration: it builds
// them against Triton (at start-up and at each reload), holds the current
// set, and answers for them on both protocols through the interception
// seams. Requests for other models pass through.
//
// The set in use is replaced atomically, and only by one that was built and
// checked completely: requests see the old set or the new one, never a
// half-loaded state.
type Models struct {
	log     *slog.Logger
	conn    *grpc.ClientConn // to Triton, shared with the pass-through
	rpc     tritonpb.GRPCInferenceServiceClient
	cache   *control.Cache
	budget  *limits.Budget // limits.max_inflight_bytes
	stats   *modelstats.Registry
	metrics *metrics.Metrics
	// readers knows which Triton models read ReACT's request parameters
	// (backend mode), for the react-* headers of relayed requests.
	readers *backendmode.Readers
	// feedback records the requests served with an experiment's arm, for
	// their outcomes; nil records nothing. It is the process's, kept
	// across reloads.
	feedback *outcomes.Feedback

	state  atomic.Pointer[modelsState]
	reload sync.Mutex // one build at a time

	readiness *readiness.Checker
	// redact removes Triton's addresses from the messages clients get.
	redact *passthrough.Redactor
	logged passthrough.LogLimit

	// sampler is live sampling (SetSampler); nil samples nothing.
	sampler atomic.Pointer[sampling.Sampler]
}

// modelsState is one configuration's controllable models.
type modelsState struct {
	cfg *config.Config
	// up is the upstream Triton, as cfg configures it.
	up *pipeline.Upstream
	// names are the controllable model names the configuration declares,
	// known before the set is built.
	names map[string]bool
	// set is nil until the first build succeeds.
	set *pipeline.Set
	// pending says why set is still nil.
	pending error
	// optOut is the sampling opt-out header while the configuration
	// samples, "" when it does not, and private the keys that never reach
	// Triton beside ReACT's own: it.
	optOut  string
	private *passthrough.PrivateKeys
	// held is private with the opt-out header of a sampler in service
	// that is not optOut (PrivateKeys), made once per header.
	held atomic.Pointer[heldKeys]
}

// Option configures Models.
type Option func(*Models)

// WithFeedback records every request served with an experiment's arm in
// f, under its id (a request without one gets one, returned in
// react-request-id), for the outcome feedback that may follow.
func WithFeedback(f *outcomes.Feedback) Option {
	return func(ms *Models) { ms.feedback = f }
}

// NewModels returns the controllable models of cfg, not yet built: Start
// builds them. conn is the connection to the upstream Triton; m may be nil.
func NewModels(cfg *config.Config, conn *grpc.ClientConn, m *metrics.Metrics, log *slog.Logger, opts ...Option) (*Models, error) {
	var obs control.CacheObserver
	if m != nil {
		obs = m
	}
	cache := control.NewCacheWith(cfg.CacheOptions(obs))
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ms := &Models{
		log:     log,
		conn:    conn,
		rpc:     tritonpb.NewGRPCInferenceServiceClient(conn),
		cache:   cache,
		budget:  limits.NewBudget(int64(cfg.Limits.MaxInflightBytes)),
		stats:   &modelstats.Registry{},
		metrics: m,
		redact:  passthrough.NewRedactor(cfg.Triton.GRPC, cfg.Triton.HTTP),
	}
	ms.readers = backendmode.NewReaders(ms.rpc)
	for _, o := range opts {
		o(ms)
	}
	var observe func(ready bool)
	if m != nil {
		observe = m.Ready
		m.WatchCache(cache.Stats)
		m.WatchBudget(ms.budget)
	}
	ms.readiness = readiness.New(ms.rpc, ms.upstreamError, log, observe)
	ms.state.Store(ms.newState(cfg, nil, errors.New("loading")))
	return ms, nil
}

// shapes are the width and task count of each components entry's file in
// a built set, for the memory budget.
func shapes(set *pipeline.Set) map[string]memory.Shape {
	out := map[string]memory.Shape{}
	for _, m := range set.Models {
		if p := m.Profile(); p != nil {
			out[p.Name()] = memory.Shape{D: p.D(), Tasks: len(p.Tasks())}
		}
	}
	return out
}

// newState returns the state of cfg with set (nil while pending).
func (ms *Models) newState(cfg *config.Config, set *pipeline.Set, pending error) *modelsState {
	names := make(map[string]bool, len(cfg.Models))
	for _, m := range cfg.Models {
		names[m.Name] = true
	}
	up := &pipeline.Upstream{RPC: ms.rpc, Addr: cfg.Triton.GRPC, Timeout: cfg.Triton.Timeout}
	st := &modelsState{cfg: cfg, up: up, names: names, set: set, pending: pending}
	if cfg.Sampling.Enabled {
		st.optOut = cfg.Sampling.OptOutHeader
		st.private = passthrough.NewPrivateKeys(st.optOut)
	}
	return st
}

// Start builds the configured models, trying again while the only problems
// are transient ones (Triton unreachable, models not loaded yet) until the
// configuration's start-up timeout. Meanwhile the controllable models answer
// UNAVAILABLE and the sidecar reports not ready. A permanent problem, or
// the timeout, is returned with every problem listed.
//
// Each attempt builds the configuration then in service, under the same
// lock as Reload: a reload that succeeds while Start waits for Triton ends
// Start (the models are built), and one that fails leaves Start trying the
// configuration it had.
func (ms *Models) Start(ctx context.Context) error {
	timeout := ms.state.Load().cfg.Triton.StartupTimeout
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	delay := 250 * time.Millisecond
	for attempt := 1; ; attempt++ {
		done, err := ms.startAttempt(ctx)
		if done {
			if err == nil {
				st := ms.state.Load()
				ms.log.Info("controllable models ready", "models", len(st.set.Models), "attempts", attempt,
					"memory_budget", memory.BudgetOf(st.cfg, shapes(st.set), 0).String())
			}
			return err
		}
		if attempt == 1 || attempt%20 == 0 {
			ms.log.Warn("waiting for Triton", "problems", err.Error())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("loading the controllable models: not ready within triton.startup_timeout %v:\n%w", timeout, err)
		case <-time.After(delay):
		}
		delay = min(2*delay, 2*time.Second)
	}
}

// startAttempt makes one attempt of Start. done reports that Start is over:
// built (err nil, perhaps by a reload meanwhile) or failed for good.
func (ms *Models) startAttempt(ctx context.Context) (done bool, err error) {
	ms.reload.Lock()
	defer ms.reload.Unlock()
	st := ms.state.Load()
	if st.set != nil {
		return true, nil // a reload built the models meanwhile
	}
	if len(st.cfg.Models) == 0 && len(st.cfg.Components) == 0 {
		ms.state.Store(ms.newState(st.cfg, &pipeline.Set{}, nil))
		return true, nil
	}
	set, err := ms.build(ctx, st)
	if err == nil {
		ms.state.Store(ms.newState(st.cfg, set, nil))
		return true, nil
	}
	ms.state.Store(ms.newState(st.cfg, nil, err))
	var be problem.List
	if !errors.As(err, &be) || !be.Transient() {
		return true, fmt.Errorf("loading the controllable models:\n%w", err)
	}
	return false, err
}

// Reload builds the models of a new configuration and, if every check
// passes, puts them in service; otherwise the old ones keep serving and the
// error lists every problem. The upstream addresses, listen addresses and
// limits that need a restart are the caller's to compare.
func (ms *Models) Reload(ctx context.Context, cfg *config.Config) error {
	ms.reload.Lock()
	defer ms.reload.Unlock()
	ctx, cancel := context.WithTimeout(ctx, cfg.Triton.StartupTimeout)
	defer cancel()
	next := ms.newState(cfg, nil, nil)
	set, err := ms.build(ctx, next)
	if err != nil {
		return err
	}
	next.set = set
	ms.log.Info("memory budget", "memory_budget", memory.BudgetOf(cfg, shapes(set), 0).String())
	ms.cache.Reconfigure(cfg.CacheOptions(nil))
	ms.budget.SetLimit(int64(cfg.Limits.MaxInflightBytes))
	prev := ms.state.Swap(next)
	ms.readers.Forget()
	prev.set.Close() // the old set's shadow comparisons: cancelled, waited for
	return nil
}

// Close stops the background work of the models in service (their shadow
// comparisons, cancelled and waited for); requests still answer, without
// it. The command calls it once the servers have stopped.
func (ms *Models) Close() { ms.state.Load().set.Close() }

// build builds the models of a state's configuration.
func (ms *Models) build(ctx context.Context, st *modelsState) (*pipeline.Set, error) {
	var obs control.Observer
	if ms.metrics != nil {
		obs = ms.metrics
	}
	opts := pipeline.Options{Cache: ms.cache, Observer: obs, Stats: ms.stats}
	if ms.metrics != nil {
		opts.Shadow = ms.metrics.Shadow()
	}
	return pipeline.Build(ctx, st.cfg, st.up, opts)
}

// Files returns the components files in use, for the reload watcher.
func (ms *Models) Files() []string {
	st := ms.state.Load()
	files := make([]string, 0, len(st.cfg.Components))
	for _, c := range st.cfg.Components {
		files = append(files, c.Path)
	}
	return files
}

// Checksums returns the SHA-256 of each components file in use, by path.
func (ms *Models) Checksums() map[string]string {
	if st := ms.state.Load(); st.set != nil {
		return st.set.Files
	}
	return nil
}

// Config returns the configuration in use.
func (ms *Models) Config() *config.Config { return ms.state.Load().cfg }

// PrivateKeys returns the headers and metadata keys that never reach
// Triton beside ReACT's own: the sampling opt-out header of the
// configuration in use while it samples, and that of the sampler in
// service (SetSampler), which is a previous configuration's until the
// reload's sampling section is configured, or when configuring it failed
// (sampling.Sampler.OptOutHeader): a header that keeps a request out of
// the sample never reaches Triton. The proxies ask for them on each call
// (server.Config.Private).
func (ms *Models) PrivateKeys() *passthrough.PrivateKeys {
	st := ms.state.Load()
	h := ms.sampler.Load().OptOutHeader()
	if h == "" || h == st.optOut {
		return st.private
	}
	if k := st.held.Load(); k != nil && k.header == h {
		return k.keys
	}
	k := &heldKeys{header: h, keys: passthrough.NewPrivateKeys(st.optOut, h)}
	st.held.Store(k)
	return k.keys
}

// heldKeys are a state's private keys with header, a sampler's.
type heldKeys struct {
	header string
	keys   *passthrough.PrivateKeys
}

// upstreamContext is passthrough.UpstreamContext with the private keys in
// use.
func (ms *Models) upstreamContext(ctx context.Context) context.Context {
	return passthrough.UpstreamContext(ctx, ms.PrivateKeys())
}

// replaces reports whether the sidecar answers for version of the model
// name in Triton's lists (statistics, index) in Triton's place: every
// version of a declared model, but for the versions of a graph-form
// model's ensemble other than the one it serves (an empty version, as
// index entries of unloaded models have, counts as its own).
func (st *modelsState) replaces(name, version string) bool {
	if !st.names[name] {
		return false
	}
	if st.set == nil {
		return true
	}
	m := st.set.Models[name]
	return m == nil || !m.Relays(version)
}

// Ready reports whether the configured models are built.
func (ms *Models) Ready() bool { return ms.state.Load().set != nil }

// lookup finds a controllable model by name, with the upstream to serve it
// through. ok is false for a model the configuration does not declare (pass
// it through); a declared model that is not built yet gives an UNAVAILABLE
// status.
func (ms *Models) lookup(name string) (m *pipeline.Model, up *pipeline.Upstream, ok bool, err error) {
	st := ms.state.Load()
	if !st.names[name] {
		return nil, nil, false, nil
	}
	if st.set == nil {
		return nil, nil, true, &loadingError{status.Newf(codes.Unavailable, "sidecar: model %q is not loaded yet: %v", name, st.pending)}
	}
	m = st.set.Models[name]
	if m == nil {
		return nil, nil, true, &loadingError{status.Newf(codes.Unavailable, "sidecar: model %q is not loaded", name)}
	}
	return m, st.up, true, nil
}

// loadingError is the UNAVAILABLE status of a controllable model the sidecar
// has not built yet: HTTP answers it 503, where an unreachable Triton is
// 502.
type loadingError struct{ st *status.Status }

func (e *loadingError) Error() string              { return e.st.Err().Error() }
func (e *loadingError) GRPCStatus() *status.Status { return e.st }

// all returns the built controllable models, in configuration order.
func (ms *Models) all() []*pipeline.Model {
	st := ms.state.Load()
	if st.set == nil {
		return nil
	}
	out := make([]*pipeline.Model, 0, len(st.cfg.Models))
	for _, mc := range st.cfg.Models {
		if m := st.set.Models[mc.Name]; m != nil {
			out = append(out, m)
		}
	}
	return out
}

// declared returns the configured model names, in configuration order.
func (ms *Models) declared() []string {
	st := ms.state.Load()
	out := make([]string, len(st.cfg.Models))
	for i, mc := range st.cfg.Models {
		out[i] = mc.Name
	}
	return out
}

// upstreamError is the error of a call the sidecar made to Triton itself,
// as the pass-through gives it (passthrough.UpstreamError), without
// Triton's address (clientError; the log has it).
func (ms *Models) upstreamError(err error) error {
	return ms.clientError(passthrough.UpstreamError(err))
}

// clientMessage is a status's message as a client may see it: without
// Triton's addresses. A message that named one is logged in full (at most
// once a second).
func (ms *Models) clientMessage(st *status.Status) string {
	msg := ms.redact.Redact(st.Message())
	if msg != st.Message() {
		ms.logged.Do(func() {
			ms.log.Warn("upstream Triton", "code", st.Code().String(), "error", st.Message(), "triton", ms.Config().Triton.GRPC)
		})
	}
	return msg
}

// backendParameters returns the request parameters a relayed inference
// request for model (version) gets from ReACT's headers hdr (backend mode:
// backendmode.Readers.Parameters). When Triton cannot say whether the
// model reads them, the request is refused with UNAVAILABLE rather than
// relayed without its preference.
func (ms *Models) backendParameters(ctx context.Context, model, version string, hdr control.Values) (map[string]string, error) {
	params, err := ms.readers.Parameters(ctx, model, version, hdr)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "sidecar: model %q: cannot tell whether it reads the react-preference and react-preset headers it was sent (upstream Triton: %s)",
			model, ms.clientMessage(status.Convert(err)))
	}
	return params, nil
}

// clientError is err as a client may see it: its status without Triton's
// addresses, and the 503 of a model whose parts are gone kept.
func (ms *Models) clientError(err error) error {
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	msg := ms.clientMessage(st)
	if msg == st.Message() {
		return err
	}
	sp := st.Proto()
	sp.Message = msg
	var gone *partGoneError
	if errors.As(err, &gone) {
		return &partGoneError{status.FromProto(sp)}
	}
	return status.FromProto(sp).Err()
}

// modelReady asks Triton whether every model a controllable model calls is
// ready, as the sidecar's own readiness asks it
// (readiness.Checker.PartsReady).
func (ms *Models) modelReady(ctx context.Context, m *pipeline.Model) (bool, error) {
	err := ms.readiness.PartsReady(ctx, []*pipeline.Model{m}, "")
	var nr *readiness.NotReadyError
	if errors.As(err, &nr) {
		return false, nil
	}
	return err == nil, err
}
