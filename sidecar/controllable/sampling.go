package controllable

import (
	"context"
	"net/http"
	"strings"

	"google.golang.org/grpc/metadata"

	"github.com/mergectl/react-triton/sidecar/pipeline"
	"github.com/mergectl/react-triton/sidecar/sampling"
	"github.com/mergectl/react-triton/triton/tritonhttp"
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

// sampleRelayedHTTP offers a relayed HTTP inference request to model,
// answered with status, to the sampler: only one Triton answered with 200
// is considered, and a raw binary request (its one input's name and shape
// are Triton's to deduce) is not. With sampling on, the response is sent
// (w flushed) first; with it off, nothing is done, the headers not even
// converted.
func (ms *Models) sampleRelayedHTTP(w http.ResponseWriter, h http.Header, model string, req *tritonhttp.Request, status int) {
	s := ms.sampler.Load()
	if !s.Sampling() || status != http.StatusOK || req.Raw {
		return
	}
	http.NewResponseController(w).Flush()
	s.RelayedDecoded(model, headerMetadata(h), req.Proto, ms.saturated())
}

// headerMetadata returns HTTP headers as gRPC metadata: the keys in lower
// case, as gRPC carries them.
func headerMetadata(h http.Header) metadata.MD {
	md := make(metadata.MD, len(h))
	for k, v := range h {
		k = strings.ToLower(k)
		md[k] = append(md[k], v...)
	}
	return md
}

// answered is a relayed HTTP response's writer that records the status
// it was sent with (0 before; informational answers are not the status).
type answered struct {
	http.ResponseWriter
	status int
}

func (a *answered) WriteHeader(code int) {
	if a.status == 0 && code >= 200 {
		a.status = code
	}
	a.ResponseWriter.WriteHeader(code)
}

func (a *answered) Write(p []byte) (int, error) {
	if a.status == 0 {
		a.status = http.StatusOK
	}
	return a.ResponseWriter.Write(p)
}

// Unwrap gives http.ResponseController (the proxy's flushes) the writer
// underneath.
func (a *answered) Unwrap() http.ResponseWriter { return a.ResponseWriter }

// pendingKey is the context key of a request's pending sample.
type pendingKey struct{}

// pendingSample is a controllable model's sample decided while the
// request was served, started once its response has been sent; md is the
// request's metadata (an HTTP request's headers as metadata), where the
// opt-out header is looked for.
type pendingSample struct {
	md    metadata.MD
	start func()
}

// withPendingSample returns a context in which serve may leave a sample of
// a request with metadata md, and the holder whose run starts it (nothing
// when none was left).
func withPendingSample(ctx context.Context, md metadata.MD) (context.Context, *pendingSample) {
	p := &pendingSample{md: md}
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
// after the response. Without such a caller (streams) nothing is sampled.
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
	p.start = s.Served(m.Name(), p.md, ms.saturated(), in, backbone, res.Feature)
}
