package config

import (
	"runtime"
	"testing"
	"time"

	"github.com/mergectl/react-triton/control"
)

// TestAdmissionSolvers: max_concurrent_solves when set, else half the
// cores, at least one.
func TestAdmissionSolvers(t *testing.T) {
	for _, tc := range []struct{ set, cores, want int }{
		{0, 1, 1}, {0, 2, 1}, {0, 3, 1}, {0, 8, 4}, {3, 8, 3}, {5, 1, 5},
	} {
		a := Admission{MaxConcurrentSolves: tc.set}
		if got := a.Solvers(tc.cores); got != tc.want {
			t.Errorf("max_concurrent_solves %d, %d cores: %d solvers, want %d", tc.set, tc.cores, got, tc.want)
		}
	}
}

// TestCacheOptions: every cache and admission key reaches the cache's
// options, each its own value, and a refusal is held at most retry_after.
func TestCacheOptions(t *testing.T) {
	c := Default()
	c.Cache = Cache{MaxBytes: 3 * MiB, Size: 4}
	c.Admission = Admission{MaxPendingSolves: 5, MaxConcurrentSolves: 6, RetryAfter: 7 * time.Second,
		KeyRate: 8.5, KeyBurst: 9, SolveRate: 10.5, SolveBurst: 11, SolveShare: 0.25, SolveShareBurst: 13 * time.Millisecond, ShedDelay: 12 * time.Millisecond}
	obs := nopObserver{}
	want := control.CacheOptions{MaxBytes: 3 << 20, MaxEntries: 4, MaxPendingSolves: 5, MaxConcurrentSolves: 6,
		RetryAfter: 7 * time.Second, KeyRate: 8.5, KeyBurst: 9, SolveRate: 10.5, SolveBurst: 11, SolveShare: 0.25, SolveShareBurst: 13 * time.Millisecond, ShedDelay: 12 * time.Millisecond, Observer: obs}
	if got := c.CacheOptions(obs); got != want {
		t.Errorf("CacheOptions:\n got %+v\nwant %+v", got, want)
	}
	c.Admission.ShedDelay, c.Admission.RetryAfter = 100*time.Millisecond, 50*time.Millisecond
	if got := c.CacheOptions(nil).ShedDelay; got != 50*time.Millisecond {
		t.Errorf("shed_delay 100ms, retry_after 50ms: a refusal held %v, want retry_after", got)
	}
	c.Admission.MaxConcurrentSolves = 0
	if got, want := c.CacheOptions(nil).MaxConcurrentSolves, max(1, runtime.GOMAXPROCS(0)/2); got != want {
		t.Errorf("max_concurrent_solves 0: %d solvers, want %d", got, want)
	}
}

// nopObserver is a control.CacheObserver that observes nothing.
type nopObserver struct{}

func (nopObserver) Shed(string, string) {}
func (nopObserver) Cancelled(string)    {}
func (nopObserver) Evicted(string)      {}
