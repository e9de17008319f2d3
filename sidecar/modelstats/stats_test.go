package modelstats_test

import (
	"sync"
	"testing"
	"time"

	"github.com/mergectl/react-triton/sidecar/modelstats"
)

func TestStats(t *testing.T) {
	var s modelstats.Stats
	before := uint64(time.Now().UnixMilli())
	s.Record(3, 5*time.Millisecond, true)
	s.Record(2, time.Millisecond, true)
	s.Record(4, 2*time.Millisecond, false)
	s.Record(1, -time.Second, false) // a clock step back counts no time
	after := uint64(time.Now().UnixMilli())

	p := s.Proto("m", "1")
	is := p.GetInferenceStats()
	checks := []struct {
		name      string
		got, want uint64
	}{
		{"success.count", is.GetSuccess().GetCount(), 2},
		{"success.ns", is.GetSuccess().GetNs(), uint64(6 * time.Millisecond)},
		{"fail.count", is.GetFail().GetCount(), 2},
		{"fail.ns", is.GetFail().GetNs(), uint64(2 * time.Millisecond)},
		{"inference_count", p.GetInferenceCount(), 5},
		{"execution_count", p.GetExecutionCount(), 2},
		{"queue.count", is.GetQueue().GetCount(), 2},
		{"compute_input.count", is.GetComputeInput().GetCount(), 2},
		{"compute_infer.count", is.GetComputeInfer().GetCount(), 2},
		{"compute_infer.ns", is.GetComputeInfer().GetNs(), uint64(6 * time.Millisecond)},
		{"compute_output.count", is.GetComputeOutput().GetCount(), 2},
		{"cache_hit.count", is.GetCacheHit().GetCount(), 0},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	if p.GetName() != "m" || p.GetVersion() != "1" {
		t.Errorf("name %q version %q", p.GetName(), p.GetVersion())
	}
	if l := p.GetLastInference(); l < before || l > after {
		t.Errorf("last_inference %d, want within [%d, %d]", l, before, after)
	}
	if is.GetQueue() == nil || is.GetCacheMiss() == nil {
		t.Error("queue and cache_miss must be present (clients read them)")
	}
}

func TestStatsConcurrentAndRegistry(t *testing.T) {
	var r modelstats.Registry
	a := r.For("a")
	if r.For("a") != a || r.For("b") == a {
		t.Fatal("For must return one Stats per name")
	}
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				r.For("a").Record(2, time.Microsecond, j%4 != 0)
			}
		}()
	}
	wg.Wait()
	p := a.Proto("a", "1")
	if got := p.GetInferenceStats().GetSuccess().GetCount(); got != 16*75 {
		t.Errorf("success %d, want %d", got, 16*75)
	}
	if got := p.GetInferenceStats().GetFail().GetCount(); got != 16*25 {
		t.Errorf("fail %d, want %d", got, 16*25)
	}
	if got := p.GetInferenceCount(); got != 2*16*75 {
		t.Errorf("inference_count %d, want %d", got, 2*16*75)
	}
	if q, s := p.GetInferenceStats().GetQueue().GetCount(), p.GetInferenceStats().GetSuccess().GetCount(); q != s {
		t.Errorf("queue count %d != success count %d", q, s)
	}
}
