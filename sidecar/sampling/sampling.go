// Package sampling wires calibrating from live traffic (package
// livestats) into the sidecar: it builds the sampler from the
// configuration's sampling section (at start and on each reload), runs its
// checkpoint loop, and, after a sampled request's response has been sent,
// runs the request's inputs through the merged backbone and the task's
// expert on Triton and adds the pair of features to the task's sums. It
// never delays or fails the client's request: Relayed, RelayedDecoded and
// Served only decide (livestats.Sampler.Admit) and start a goroutine,
// bounded by the sampler's slots (sampling.max_concurrent).
//
// A reload that leaves the sampling section and the backbone's feature
// dimension as they were keeps the sampler: the same window, file and sums.
// One that changes them writes the current window's file a last time and
// starts a new sampler, with a new window and so a new file; the files of
// both windows add exactly in calibrate merge when the backbone and D are
// the same, and calibrate merge refuses files of different backbones or D.
package sampling

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mergectl/react-triton/sidecar/passthrough"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/livestats"
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// Sampler is the sidecar's live sampling. Its zero value is not usable:
// New makes one, Configure turns sampling on or off for a configuration,
// Close ends it. A nil *Sampler samples nothing. It is safe for
// concurrent use.
type Sampler struct {
	rpc tritonpb.GRPCInferenceServiceClient
	log *slog.Logger

	mu     sync.Mutex // Configure and Close, one at a time
	closed bool
	cur    atomic.Pointer[active]
}

// active is one livestats.Sampler in service, with the models it calls.
type active struct {
	rpc      tritonpb.GRPCInferenceServiceClient
	ls       *livestats.Sampler
	set      livestats.Settings
	backbone target
	experts  map[string]target // by task
	timeout  atomic.Int64      // triton.timeout of each call, in nanoseconds

	// calls is the context of the samples' Triton calls, cancelled when
	// the sampler is retired and its samples did not finish in time.
	calls       context.Context
	cancelCalls context.CancelFunc

	mu       sync.Mutex
	n        int           // samples in flight
	closing  bool          // no new sample starts
	idle     chan struct{} // closed when n reaches 0 while closing
	stopRun  context.CancelFunc
	runDone  chan struct{}
	runError error // Run's, once runDone is closed
}

// target is a model whose feature a sample needs: its name, version and
// feature output, resolved from Triton's metadata.
type target struct {
	model, version, output string
}

// New returns a sampler that calls Triton through conn (a connection of
// its own, so that its samples can finish at shutdown after the servers'
// connection has closed), sampling nothing until Configure. log may be
// nil.
func New(conn grpc.ClientConnInterface, log *slog.Logger) *Sampler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Sampler{rpc: tritonpb.NewGRPCInferenceServiceClient(conn), log: log}
}

// Configure applies cfg's sampling section. Off, it retires the sampler in
// service, if any (its samples in flight finish, its file is written a
// last time). On, it reads the backbone's and each expert's feature output
// and dimension from Triton (trying again until ctx ends while Triton or
// a model is not ready), then keeps the sampler in service when its
// settings and D are unchanged, or retires it and starts a new one. It
// also measures staleness against cfg's components file calibrated on the
// sampled backbone, if any (Watch). An error leaves the sampler in service
// as it was.
func (s *Sampler) Configure(ctx context.Context, cfg *config.Config) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("sampling: closed")
	}
	if !cfg.Sampling.Enabled {
		if old := s.cur.Swap(nil); old != nil {
			s.retire(old, cfg.Triton.Timeout)
			s.log.Info("sampling off")
		}
		return nil
	}
	set := cfg.SamplingSettings()
	if set.Replica == "" {
		r, err := livestats.DefaultReplica()
		if err != nil {
			return fmt.Errorf("sampling: %w", err)
		}
		set.Replica = r
	}
	backbone, experts, d, err := s.resolve(ctx, set)
	if err != nil {
		return err
	}
	old := s.cur.Load()
	a := old
	if old == nil || old.ls.D() != d || !reflect.DeepEqual(old.set, set) ||
		old.backbone != backbone || !reflect.DeepEqual(old.experts, experts) {
		ls, err := livestats.New(set, d)
		if err != nil {
			return fmt.Errorf("sampling: %w", err)
		}
		a = &active{rpc: s.rpc, ls: ls, set: set, backbone: backbone, experts: experts}
		a.calls, a.cancelCalls = context.WithCancel(context.Background())
		a.start(s.log)
	}
	a.timeout.Store(int64(cfg.Triton.Timeout))
	if a != old {
		s.cur.Store(a)
		if old != nil {
			s.retire(old, cfg.Triton.Timeout)
		}
		s.log.Info("sampling on", "fraction", set.Fraction, "models", len(set.Models), "tasks", len(set.Tasks),
			"d", d, "replica", set.Replica, "file", a.ls.Path(), "kept", false)
	} else {
		s.log.Info("sampling on", "d", d, "file", a.ls.Path(), "kept", true)
	}
	if err := a.watch(cfg); err != nil {
		s.log.Warn("sampling: staleness not measured for some tasks", "error", err)
	}
	return nil
}

// start runs the sampler's checkpoint loop until it is retired.
func (a *active) start(log *slog.Logger) {
	ctx, stop := context.WithCancel(context.Background())
	a.stopRun, a.runDone = stop, make(chan struct{})
	go func() {
		defer close(a.runDone)
		a.runError = a.ls.Run(ctx, func(err error) { log.Error("sampling: checkpoint", "error", err) })
	}()
}

// retire ends a sampler that is no longer in service: no sample starts,
// the samples in flight finish (after grace, their Triton calls are
// cancelled, and then they finish at once as failed), and the checkpoint
// loop writes the window's file a last time. It returns that write's error.
func (s *Sampler) retire(a *active, grace time.Duration) error {
	a.drain(grace)
	a.stopRun()
	<-a.runDone
	if a.runError != nil {
		s.log.Error("sampling: the last checkpoint", "error", a.runError, "file", a.ls.Path())
	}
	return a.runError
}

// Close ends sampling at shutdown: it waits for the samples in flight (for
// up to grace, then cancels their calls), then writes the final
// checkpoint, whose error it returns. Configure fails after it.
func (s *Sampler) Close(grace time.Duration) error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if a := s.cur.Swap(nil); a != nil {
		return s.retire(a, grace)
	}
	return nil
}

// begin counts a sample in flight; false once the sampler is retiring.
func (a *active) begin() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closing {
		return false
	}
	a.n++
	return true
}

// end counts a sample done.
func (a *active) end() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n--
	if a.n == 0 && a.idle != nil {
		close(a.idle)
		a.idle = nil
	}
}

// drain stops new samples and waits for those in flight, cancelling their
// calls after grace.
func (a *active) drain(grace time.Duration) {
	a.mu.Lock()
	a.closing = true
	if a.n == 0 {
		a.mu.Unlock()
		a.cancelCalls()
		return
	}
	idle := make(chan struct{})
	a.idle = idle
	a.mu.Unlock()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
		a.cancelCalls()
		<-idle
	}
	a.cancelCalls()
}

// Describe describes nothing: the sampler in service changes with the
// configuration, so the collector is unchecked (its metrics are
// livestats'; see livestats.MetricRequests and the others).
func (s *Sampler) Describe(chan<- *prometheus.Desc) {}

// Collect sends the metrics of the sampler in service, none when sampling
// is off. A sampler started by a reload starts its counters from zero.
func (s *Sampler) Collect(ch chan<- prometheus.Metric) {
	if a := s.cur.Load(); a != nil {
		a.ls.Collect(ch)
	}
}

// Register registers the sampler's metrics with reg, once for the
// process: they follow the sampler in service across reloads.
func (s *Sampler) Register(reg prometheus.Registerer) error {
	if err := reg.Register(s); err != nil {
		return fmt.Errorf("sampling: registering the metrics: %w", err)
	}
	return nil
}

// Sampling reports whether a sampler is in service (false when s is nil):
// when it is not, no request is sampled, and a caller need not prepare
// what Relayed and RelayedDecoded take.
func (s *Sampler) Sampling() bool {
	return s != nil && s.cur.Load() != nil
}

// Path returns the file the sampler in service writes, "" when sampling
// is off.
func (s *Sampler) Path() string {
	if a := s.cur.Load(); a != nil {
		return a.ls.Path()
	}
	return ""
}

// OptOutHeader returns the opt-out header of the sampler in service, ""
// when sampling is off (or s is nil). Until a reload's sampling section is
// configured, or when configuring it failed, it is the previous
// configuration's: the sampler in service honours it, and the sidecar keeps
// it from Triton (controllable.Models.PrivateKeys).
func (s *Sampler) OptOutHeader() string {
	if s == nil {
		return ""
	}
	if a := s.cur.Load(); a != nil {
		return a.ls.OptOutHeader()
	}
	return ""
}

// Flush writes the current window's file now, as the checkpoint loop does
// on its schedule (nothing when sampling is off).
func (s *Sampler) Flush() error {
	if a := s.cur.Load(); a != nil {
		return a.ls.Flush()
	}
	return nil
}

// Wait waits until no sample is in flight, or ctx ends: for the tests, and
// for a caller that reads the sums.
func (s *Sampler) Wait(ctx context.Context) error {
	for {
		a := s.cur.Load()
		if a == nil || a.ls.InFlight() == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// optedOut reports whether md carries the opt-out header, with any value
// (gRPC metadata keys are lower case; the configured name may not be).
func optedOut(md metadata.MD, header string) bool {
	if _, ok := md[header]; ok {
		return true
	}
	for k := range md {
		if strings.EqualFold(k, header) {
			return true
		}
	}
	return false
}

// admit decides whether a request to model, with metadata md, is sampled:
// the sampler in service and the sample, counted in flight, or nils. The
// caller ends the sample (a.end) when done with it.
func (s *Sampler) admit(model string, md metadata.MD, saturated bool) (*active, *livestats.Sample) {
	if s == nil {
		return nil, nil
	}
	a := s.cur.Load()
	if a == nil || !a.begin() {
		return nil, nil
	}
	x, _ := a.ls.Admit(livestats.Request{Model: model, OptOut: optedOut(md, a.ls.OptOutHeader()), Saturated: saturated})
	if x == nil {
		a.end()
		return nil, nil
	}
	return a, x
}

// Relayed considers a pass-through gRPC inference request that Triton has
// answered and whose response has been sent: payload is the client's
// ModelInferRequest message as relayed, md its metadata, saturated the
// sidecar's saturation signal. A sampled request is decoded and run
// through the backbone and its task's expert in a goroutine; Relayed
// itself only decides. payload must not change afterwards.
func (s *Sampler) Relayed(md metadata.MD, payload []byte, saturated bool) {
	a, x := s.admit(passthrough.StringField(payload, 1), md, saturated)
	if x == nil {
		return
	}
	go func() {
		defer a.end()
		req := new(tritonpb.ModelInferRequest)
		if err := proto.Unmarshal(payload, req); err != nil {
			x.Skip(livestats.Failed)
			return
		}
		a.sample(x, req, nil)
	}()
}

// RelayedDecoded is Relayed for a request the sidecar has already
// decoded: a pass-through HTTP inference request to model (the URL's) that
// Triton answered with 200 and whose response has been sent, req as
// tritonhttp.ParseRequest reads it (every input's data, JSON or binary, as
// raw contents, as the gRPC request would carry it), md its headers as
// gRPC metadata (lower-case keys). The sample's calls are those of a gRPC
// request with the same inputs, so its rows are the same bits. req must
// not change afterwards.
func (s *Sampler) RelayedDecoded(model string, md metadata.MD, req *tritonpb.ModelInferRequest, saturated bool) {
	a, x := s.admit(model, md, saturated)
	if x == nil {
		return
	}
	go func() {
		defer a.end()
		a.sample(x, req, nil)
	}()
}

// Served considers a request to a controllable model that was served: in
// is the request with its inputs under the backbone's names (as the
// backbone was called), backbone the model, version and output the
// pipeline called, and feature that output for the served rows. It decides
// at once and returns the function that starts the sample, which the
// caller calls once the response has been sent (nil when the request is
// not sampled). The feature is reused when the backbone is the sampled
// one (sampling.backbone, the same version and output); otherwise the
// sampled backbone is called as for a relayed request. Only the task's
// expert is called in the first case.
func (s *Sampler) Served(model string, md metadata.MD, saturated bool, in *tritonpb.ModelInferRequest, backbone react.ModelRef, feature triton.Tensor) (start func()) {
	a, x := s.admit(model, md, saturated)
	if x == nil {
		return nil
	}
	reuse := backbone.Name == a.backbone.model && backbone.Version == a.backbone.version && backbone.Output == a.backbone.output
	return func() {
		go func() {
			defer a.end()
			var mtl []float32
			if reuse {
				var err error
				if mtl, err = feature.AsFloat32(); err != nil {
					x.Skip(livestats.Failed)
					return
				}
			}
			a.sample(x, in, mtl)
		}()
	}
}

// sample computes a sampled request's features and adds them: mtl is the
// backbone's feature when already known.
func (a *active) sample(x *livestats.Sample, req *tritonpb.ModelInferRequest, mtl []float32) {
	var err error
	if mtl == nil {
		if mtl, err = a.feature(a.backbone, req); err != nil {
			x.Skip(livestats.Failed)
			return
		}
	}
	ind, err := a.feature(a.experts[x.Task()], req)
	if err != nil {
		x.Skip(livestats.Failed)
		return
	}
	x.Add(mtl, ind) // refused rows are counted as invalid
}

// feature calls t on the request's inputs and returns its feature output
// as float32, row-major. No client metadata, id or parameter goes with the
// call.
func (a *active) feature(t target, in *tritonpb.ModelInferRequest) ([]float32, error) {
	req := &tritonpb.ModelInferRequest{
		ModelName:        t.model,
		ModelVersion:     t.version,
		Inputs:           in.GetInputs(),
		RawInputContents: in.GetRawInputContents(),
		Outputs:          []*tritonpb.ModelInferRequest_InferRequestedOutputTensor{{Name: t.output}},
	}
	ctx, cancel := context.WithTimeout(a.calls, time.Duration(a.timeout.Load()))
	defer cancel()
	resp, err := a.rpc.ModelInfer(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("sampling: %s: %w", t.model, err)
	}
	return outputFloat32(resp, t.output)
}

// outputFloat32 returns a response's output name as float32.
func outputFloat32(resp *tritonpb.ModelInferResponse, name string) ([]float32, error) {
	t, err := triton.ResponseOutput(resp, name)
	if err == nil {
		var v []float32
		if v, err = t.AsFloat32(); err == nil {
			return v, nil
		}
		err = fmt.Errorf("output %q: %w", name, err)
	}
	return nil, fmt.Errorf("sampling: %w", err)
}

// watch measures the staleness of the first components entry of cfg
// whose file was calibrated on the sampled backbone, with D the sampled
// features', under the entry's β and normalisation; with none, no task is
// watched.
func (a *active) watch(cfg *config.Config) error {
	for _, c := range cfg.Components {
		comps, _, err := control.LoadComponents(c.Path)
		if err != nil || comps.Backbone.Name != a.backbone.model || comps.D != a.ls.D() {
			continue
		}
		opts := react.DefaultOptions(comps)
		if c.Beta != nil {
			opts.Beta = *c.Beta
		}
		if c.Normalize != "" {
			opts.Normalization = react.Normalization(c.Normalize)
		}
		return a.ls.Watch(comps, opts)
	}
	for _, t := range a.set.Tasks {
		a.ls.WatchTask(t.Name, nil, 0)
	}
	return nil
}
