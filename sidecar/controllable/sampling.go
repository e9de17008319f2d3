package controllable

import (
	"google.golang.org/grpc/metadata"

	"github.com/mergectl/react-triton/sidecar/sampling"
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
