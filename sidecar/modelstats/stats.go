package modelstats

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/mergectl/react-triton/triton/tritonpb"
)

// Stats counts a controllable model's requests the way Triton counts its
// models' (ModelStatistics), so that clients such as perf_analyzer read
// them unchanged. It is safe for concurrent use.
//
// Every request is one execution. Its whole time in the sidecar, from the
// request's arrival to the response, is counted as success or fail and as
// compute_infer. Each successful request also counts once in queue,
// compute_input and compute_output, with no time, because the sidecar
// neither queues nor batches: as in Triton, where every request passes each
// stage, these counts equal the success count (perf_analyzer finds the
// model version whose queue count grew). The split into backbone,
// correction and head time is in the Prometheus metrics.
type Stats struct {
	successCount, successNs atomic.Uint64
	failCount, failNs       atomic.Uint64
	inferences, executions  atomic.Uint64
	lastInference           atomic.Uint64 // ms since the epoch
}

// Record counts one request of batch rows that took d.
func (s *Stats) Record(rows int, d time.Duration, ok bool) {
	ns := uint64(max(d, 0))
	if ok {
		s.successCount.Add(1)
		s.successNs.Add(ns)
		s.inferences.Add(uint64(max(rows, 0)))
		s.executions.Add(1)
	} else {
		s.failCount.Add(1)
		s.failNs.Add(ns)
	}
	s.lastInference.Store(uint64(time.Now().UnixMilli()))
}

// Proto returns the statistics in Triton's message shape, for the model
// name and version given.
func (s *Stats) Proto(name, version string) *tritonpb.ModelStatistics {
	success := &tritonpb.StatisticDuration{Count: s.successCount.Load(), Ns: s.successNs.Load()}
	return &tritonpb.ModelStatistics{
		Name:           name,
		Version:        version,
		LastInference:  s.lastInference.Load(),
		InferenceCount: s.inferences.Load(),
		ExecutionCount: s.executions.Load(),
		InferenceStats: &tritonpb.InferStatistics{
			Success:       success,
			Fail:          &tritonpb.StatisticDuration{Count: s.failCount.Load(), Ns: s.failNs.Load()},
			Queue:         &tritonpb.StatisticDuration{Count: success.Count},
			ComputeInput:  &tritonpb.StatisticDuration{Count: success.Count},
			ComputeInfer:  &tritonpb.StatisticDuration{Count: success.Count, Ns: success.Ns},
			ComputeOutput: &tritonpb.StatisticDuration{Count: success.Count},
			CacheHit:      &tritonpb.StatisticDuration{},
			CacheMiss:     &tritonpb.StatisticDuration{},
		},
	}
}

// Registry keeps each controllable model's Stats by name, so that
// counts survive a reload that rebuilds the models.
type Registry struct {
	mu    sync.Mutex
	stats map[string]*Stats
}

// For returns the statistics of the named model, created on first use.
func (r *Registry) For(name string) *Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stats == nil {
		r.stats = make(map[string]*Stats)
	}
	s, ok := r.stats[name]
	if !ok {
		s = new(Stats)
		r.stats[name] = s
	}
	return s
}
