package controllable

import (
	"context"

	"google.golang.org/grpc/metadata"

	"github.com/mergectl/react-triton/sidecar/pipeline"
	"github.com/mergectl/react-triton/sidecar/sampling"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// SetSampler makes the models' requests and the relayed ones candidates
// for live sampling (package sidecar/sampling); nil stops it. The command
// sets it once, before serving.
func (ms *Models) SetSampler(s *sampling.Sampler) { ms.sampler.Store(s) }

// saturated is the sampling's saturation signal: more than half of
// limits.max_inflight_bytes held by the requests in flight (the one being
// considered included). Request bytes held track the load the sidecar
// puts on Triton, and a sample would add two more calls of the same
// inputs where there is no room to spare.
func (ms *Models) saturated() bool {
	held, _ := ms.budget.Held()
	limit := ms.budget.Limit()
	return limit > 0 && 2*held > limit
}

// sampleRelayed offers a relayed gRPC inference request, answered and
// sent, to the sampler: it decides and, when sampled, computes the sample
// off the request's goroutine.
func (ms *Models) sampleRelayed(md metadata.MD, payload []byte) {
	if s := ms.sampler.Load(); s != nil {
		s.Relayed(md, payload, ms.saturated())
	}
}

// pendingKey is the context key of a request's pending sample.
type pendingKey struct{}

// pendingSample is a controllable model's sample decided while the
// request was served, started once its response has been sent.
type pendingSample struct{ start func() }

// withPendingSample returns a context in which serve may leave a sample,
// and the holder whose run starts it (nothing when none was left).
func withPendingSample(ctx context.Context) (context.Context, *pendingSample) {
	p := new(pendingSample)
	return context.WithValue(ctx, pendingKey{}, p), p
}

// run starts the pending sample, if any: after the response.
func (p *pendingSample) run() {
	if p.start != nil {
		p.start()
	}
}

// offerServed offers a served request of a controllable model of the
// explicit form to the sampler, reusing the backbone's feature of res;
// the sample is started by the caller that made ctx (withPendingSample),
// after the response. Without such a caller (HTTP, streams) nothing is
// sampled.
func (ms *Models) offerServed(ctx context.Context, m *pipeline.Model, req *tritonpb.ModelInferRequest, res *pipeline.Result) {
	p, _ := ctx.Value(pendingKey{}).(*pendingSample)
	s := ms.sampler.Load()
	if p == nil || s == nil || res == nil || res.Feature.Raw == nil {
		return
	}
	backbone, ok := m.FeatureSource()
	if !ok {
		return
	}
	in := &tritonpb.ModelInferRequest{Inputs: m.BackboneInputs(req), RawInputContents: req.GetRawInputContents()}
	md, _ := metadata.FromIncomingContext(ctx)
	p.start = s.Served(m.Name(), md, ms.saturated(), in, backbone, res.Feature)
}
