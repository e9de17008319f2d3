package control

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mergectl/react-triton/react"
)

// recordingCacheObserver counts a cache's sheds, cancellations and
// evictions.
type recordingCacheObserver struct {
	mu        sync.Mutex
	shed      map[string]int // by reason
	cancelled int
	evicted   int
}

func (o *recordingCacheObserver) Shed(_, reason string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.shed == nil {
		o.shed = map[string]int{}
	}
	o.shed[reason]++
}

func (o *recordingCacheObserver) Cancelled(string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.cancelled++
}

func (o *recordingCacheObserver) Evicted(string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.evicted++
}

func (o *recordingCacheObserver) counts() (map[string]int, int, int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	shed := map[string]int{}
	for k, v := range o.shed {
		shed[k] = v
	}
	return shed, o.cancelled, o.evicted
}

// get resolves spec on p and returns its matrix.
func get(t *testing.T, p *Profile, spec string) *Matrix {
	t.Helper()
	c, err := p.Resolve(header(spec))
	if err != nil {
		t.Fatal(err)
	}
	m, err := p.Matrix(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// waitFormed waits until m is formed.
func waitFormed(t *testing.T, m *Matrix) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !m.Formed() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if !m.Formed() {
		t.Fatal("not formed within 10 s")
	}
}

// TestCacheBoundedInBytes: a partition keeps what fits its byte budget,
// counting a factored matrix at 16·D² and a formed one at 4·D², and a
// matrix formed from its factorisation drops the factorisation.
func TestCacheBoundedInBytes(t *testing.T) {
	const d = 6
	d2 := int64(d * d)
	obs := &recordingCacheObserver{}
	cache := NewCacheWith(CacheOptions{MaxBytes: 3 * 16 * d2, MaxPendingSolves: -1, Observer: obs})
	comps := testComponents(t, d, 40, tasks3...)
	p := newTestProfile(t, ProfileSpec{Components: comps, Cache: cache})
	specs := []string{"cars=1", "dtd=1", "svhn=1", "cars=1,dtd=1", "cars=1,svhn=1"}
	cache.forming <- struct{}{} // a formation under way elsewhere: none starts
	for _, s := range specs {
		get(t, p, s)
	}
	st := cache.Stats()
	if len(st.Partitions) != 1 || st.Partitions[0].Entries != 3 || st.Partitions[0].Bytes != 3*16*d2 {
		t.Fatalf("stats %+v, want one partition of 3 factored matrices, %d bytes", st, 3*16*d2)
	}
	if _, _, ev := obs.counts(); ev != 2 {
		t.Errorf("%d evictions, want 2", ev)
	}
	// Used again, the newest is formed: 4·D², and its factorisation goes.
	<-cache.forming
	m := get(t, p, specs[4])
	waitFormed(t, m)
	deadline := time.Now().Add(5 * time.Second)
	for cache.Stats().Partitions[0].Bytes != 2*16*d2+4*d2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := cache.Stats().Partitions[0].Bytes; got != 2*16*d2+4*d2 {
		t.Errorf("%d bytes after forming one, want %d", got, 2*16*d2+4*d2)
	}
	if m.factor.Load() != nil || m.Bytes() != 4*d2 {
		t.Errorf("a formed matrix keeps its factorisation (%v) or counts %d bytes", m.factor.Load() != nil, m.Bytes())
	}
	ref := referenceW(t, comps, comps.Beta, map[string]float64{"cars": 0.5, "svhn": 0.5})
	checkApply(t, "formed, factorisation dropped", m, ref)
	// One more factored matrix (36 + 16 > 48 ·D²) evicts the least recently
	// used one, and the partition stays within its budget.
	_, _, before := obs.counts()
	cache.forming <- struct{}{}
	defer func() { <-cache.forming }()
	get(t, p, "dtd=1,svhn=1")
	if _, _, after := obs.counts(); after != before+1 {
		t.Errorf("%d evictions, want 1", after-before)
	}
	if st := cache.Stats().Partitions[0]; st.Bytes > 3*16*d2 || st.Bytes != 16*d2+4*d2+16*d2 {
		t.Errorf("%d bytes, want %d", st.Bytes, 36*d2)
	}
}

// TestCacheTooLargeForItsBudget: a matrix larger than the whole budget
// serves its request and is not kept.
func TestCacheTooLargeForItsBudget(t *testing.T) {
	cache := NewCacheWith(CacheOptions{MaxBytes: 10, MaxPendingSolves: -1})
	p := newTestProfile(t, ProfileSpec{Cache: cache})
	if m := get(t, p, "cars=1"); m == nil {
		t.Fatal("no matrix")
	}
	if n := cache.Len(); n != 0 {
		t.Errorf("%d matrices kept in a 10-byte budget", n)
	}
}

// TestCachePartitionsAreSeparate: a flood of new preferences over one
// components file evicts none of another file's matrices.
func TestCachePartitionsAreSeparate(t *testing.T) {
	cache := NewCacheWith(CacheOptions{MaxEntries: 2, MaxPendingSolves: -1})
	comps := testComponents(t, 6, 40, tasks3...)
	obs := &countingObserver{}
	a := newTestProfile(t, ProfileSpec{Name: "a", Components: comps, Checksum: "file-a", Cache: cache})
	b := newTestProfile(t, ProfileSpec{Name: "b", Components: comps, Checksum: "file-b", Cache: cache, Observer: obs})
	get(t, b, "cars=1")
	for i := 1; i <= 20; i++ {
		get(t, a, fmt.Sprintf("cars=%d,dtd=1", i))
	}
	get(t, b, "cars=1")
	if obs.count(LookupHit) != 1 || obs.count(LookupMiss) != 1 {
		t.Errorf("b's lookups %v after a flood on a: want its matrix still cached (1 miss, 1 hit)", obs.lookups)
	}
	names := map[string]int{}
	for _, ps := range cache.Stats().Partitions {
		names[ps.Name] = ps.Entries
	}
	if names["a"] != 2 || names["b"] != 1 {
		t.Errorf("partitions %v, want a: 2, b: 1", names)
	}
}

// TestCachePartitionGoesWithItsProfiles: once no profile uses a partition,
// its matrices are freed (a reload to a new components file leaves no
// stale cache behind).
func TestCachePartitionGoesWithItsProfiles(t *testing.T) {
	cache := NewCacheWith(CacheOptions{MaxPendingSolves: -1})
	func() {
		p := newTestProfile(t, ProfileSpec{Components: testComponents(t, 6, 40, tasks3...), Checksum: "old", Cache: cache})
		get(t, p, "cars=1")
		get(t, p, "dtd=1")
	}()
	if n := cache.Len(); n != 2 {
		t.Fatalf("Len %d, want 2", n)
	}
	deadline := time.Now().Add(10 * time.Second)
	for cache.Len() != 0 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := cache.Len(); n != 0 {
		t.Errorf("Len %d after the profile went, want 0", n)
	}
	cache.mu.Lock()
	left := len(cache.parts)
	cache.mu.Unlock()
	if left != 0 {
		t.Errorf("%d partitions left", left)
	}
}

// blockingSolves returns a solve function that counts its calls and blocks
// until release is closed (or its context ends).
func blockingSolves(release chan struct{}, calls *atomic.Int64) func(context.Context) (*Matrix, error) {
	return func(ctx context.Context) (*Matrix, error) {
		calls.Add(1)
		select {
		case <-release:
			return &Matrix{Key: "k", D: 1}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// waitStats waits until the cache has pending and running solves.
func waitStats(t *testing.T, c *Cache, pending, running int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if st := c.Stats(); st.Pending == pending && st.Running == running {
			return
		}
		time.Sleep(time.Millisecond)
	}
	st := c.Stats()
	t.Fatalf("%d pending and %d running solves, want %d and %d", st.Pending, st.Running, pending, running)
}

// TestCacheShedsBeyondTheQueue: with one solver and a queue of one, a third
// new preference is shed with an *OverloadError; a request for a
// preference being solved joins it instead, whatever the queue.
func TestCacheShedsBeyondTheQueue(t *testing.T) {
	obs := &recordingCacheObserver{}
	cache := NewCacheWith(CacheOptions{MaxConcurrentSolves: 1, MaxPendingSolves: 1, RetryAfter: 3 * time.Second, Observer: obs})
	release := make(chan struct{})
	var calls atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i, pref := range []string{"a", "b", "a"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, errs[i] = cache.Get(context.Background(), Key{Preference: pref}, blockingSolves(release, &calls))
		}()
		if i == 0 {
			waitStats(t, cache, 0, 1)
		} else if i == 1 {
			waitStats(t, cache, 1, 1)
		}
	}
	_, _, err := cache.Get(context.Background(), Key{Preference: "c"}, blockingSolves(release, &calls))
	var oe *OverloadError
	if !errors.As(err, &oe) || oe.Reason != ShedQueueFull || oe.RetryAfter != 3*time.Second {
		t.Fatalf("third new preference: %v, want an *OverloadError (queue_full, 3s)", err)
	}
	close(release)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("request %d: %v", i, err)
		}
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("%d solves, want 2 (a and b; the second a joined the first)", n)
	}
	if shed, _, _ := obs.counts(); shed[ShedQueueFull] != 1 {
		t.Errorf("sheds %v, want one queue_full", shed)
	}
	// With the queue empty again, a new preference is admitted.
	if _, _, err := cache.Get(context.Background(), Key{Preference: "c"}, blockingSolves(release, &calls)); err != nil {
		t.Errorf("after the queue drained: %v", err)
	}
}

// TestCacheNoQueue: MaxPendingSolves 0 sheds whenever every solver is busy.
func TestCacheNoQueue(t *testing.T) {
	cache := NewCacheWith(CacheOptions{MaxConcurrentSolves: 1, MaxPendingSolves: 0})
	release := make(chan struct{})
	var calls atomic.Int64
	go cache.Get(context.Background(), Key{Preference: "a"}, blockingSolves(release, &calls))
	waitStats(t, cache, 0, 1)
	_, _, err := cache.Get(context.Background(), Key{Preference: "b"}, blockingSolves(release, &calls))
	var oe *OverloadError
	if !errors.As(err, &oe) || oe.Reason != ShedQueueFull {
		t.Fatalf("%v, want queue_full", err)
	}
	close(release)
}

// TestCacheCancelsAQueuedSolve: a solve whose only request left while it
// waited for a solver never runs, and leaves the queue.
func TestCacheCancelsAQueuedSolve(t *testing.T) {
	obs := &recordingCacheObserver{}
	cache := NewCacheWith(CacheOptions{MaxConcurrentSolves: 1, MaxPendingSolves: 8, Observer: obs})
	release := make(chan struct{})
	var first, queued atomic.Int64
	go cache.Get(context.Background(), Key{Preference: "a"}, blockingSolves(release, &first))
	waitStats(t, cache, 0, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, _, err := cache.Get(ctx, Key{Preference: "b"}, blockingSolves(release, &queued))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%v, want the request's deadline", err)
	}
	waitStats(t, cache, 0, 1) // b left the queue at once
	close(release)
	waitStats(t, cache, 0, 0)
	if n := queued.Load(); n != 0 {
		t.Errorf("the abandoned solve ran %d times", n)
	}
	if _, c, _ := obs.counts(); c != 1 {
		t.Errorf("%d cancellations counted, want 1", c)
	}
}

// TestCacheKeepsASolveWhileSomeoneWaits: of two requests waiting for one
// solve, the one that leaves does not cancel it for the other.
func TestCacheKeepsASolveWhileSomeoneWaits(t *testing.T) {
	cache := NewCacheWith(CacheOptions{MaxPendingSolves: -1})
	release := make(chan struct{})
	var calls atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	left := make(chan error, 1)
	go func() {
		_, _, err := cache.Get(ctx, Key{Preference: "a"}, blockingSolves(release, &calls))
		left <- err
	}()
	waitStats(t, cache, 0, 1)
	stayed := make(chan error, 1)
	go func() {
		_, _, err := cache.Get(context.Background(), Key{Preference: "a"}, blockingSolves(release, &calls))
		stayed <- err
	}()
	time.Sleep(10 * time.Millisecond)
	cancel()
	if err := <-left; !errors.Is(err, context.Canceled) {
		t.Fatalf("the request that left: %v", err)
	}
	close(release)
	if err := <-stayed; err != nil {
		t.Fatalf("the request that stayed: %v (the solve was cancelled under it)", err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d solves, want 1", n)
	}
}

// TestCacheKeyRate: each client key starts at most its burst of solves at
// once, then KeyRate a second; another key has its own bucket, and a
// request that joins a solve in flight costs its key nothing.
func TestCacheKeyRate(t *testing.T) {
	obs := &recordingCacheObserver{}
	cache := NewCacheWith(CacheOptions{MaxPendingSolves: -1, KeyRate: 0.001, KeyBurst: 2, Observer: obs})
	solve := func(context.Context) (*Matrix, error) { return &Matrix{Key: "k", D: 1}, nil }
	alice := WithClientKey(context.Background(), "alice")
	for _, pref := range []string{"a", "b"} {
		if _, _, err := cache.Get(alice, Key{Preference: pref}, solve); err != nil {
			t.Fatal(err)
		}
	}
	if _, hit, err := cache.Get(alice, Key{Preference: "a"}, solve); err != nil || !hit {
		t.Errorf("a cached preference: %v, hit %v", err, hit)
	}
	_, _, err := cache.Get(alice, Key{Preference: "c"}, solve)
	var oe *OverloadError
	if !errors.As(err, &oe) || oe.Reason != ShedKeyRate {
		t.Fatalf("alice's third new preference: %v, want key_rate", err)
	}
	if _, _, err := cache.Get(WithClientKey(context.Background(), "bob"), Key{Preference: "c"}, solve); err != nil {
		t.Errorf("bob's first: %v", err)
	}
	if shed, _, _ := obs.counts(); shed[ShedKeyRate] != 1 {
		t.Errorf("sheds %v, want one key_rate", shed)
	}
}

// TestProfileGrid: with a grid of 20, nearby slider positions round to one
// preference (steps of 0.05) and share one solve; the echo is the rounded
// preference; a pinned preference is kept as it is.
func TestProfileGrid(t *testing.T) {
	obs := &countingObserver{}
	comps := testComponents(t, 6, 40, tasks3...)
	p := newTestProfile(t, ProfileSpec{Components: comps, Grid: 20, Presets: map[string]string{"third": "cars=1,dtd=1,svhn=1"}, Observer: obs})
	before := obs.solves.Load()
	var ms []*Matrix
	for _, spec := range []string{"cars=0.33,dtd=0.67", "cars=0.34,dtd=0.66", "cars=0.351,dtd=0.649"} {
		c, err := p.Resolve(header(spec))
		if err != nil {
			t.Fatal(err)
		}
		if c.Key != "cars=0.35,dtd=0.65" || !c.Gridded {
			t.Errorf("%s: key %q, gridded %v; want cars=0.35,dtd=0.65, true", spec, c.Key, c.Gridded)
		}
		m, err := p.Matrix(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	if ms[0] != ms[1] || ms[1] != ms[2] || obs.solves.Load()-before != 1 {
		t.Errorf("three slider positions: %d solves, same matrix %v; want 1 and true", obs.solves.Load()-before, ms[0] == ms[2])
	}
	ref := referenceW(t, comps, comps.Beta, map[string]float64{"cars": 0.35, "dtd": 0.65})
	checkApply(t, "grid", ms[0], ref)
	c, err := p.Resolve(header("cars=1,dtd=1,svhn=1"))
	if err != nil || c.Key != "cars=0.333334,dtd=0.333333,svhn=0.333333" || c.Gridded {
		t.Errorf("the preset's own preference: key %q, %v; want it kept as pinned", c.Key, err)
	}
}

// TestProfilePresetsOnly: only preferences that need no solve are served.
func TestProfilePresetsOnly(t *testing.T) {
	p := newTestProfile(t, ProfileSpec{PresetsOnly: true, Default: "cars=1", Presets: map[string]string{"half": "cars=1,dtd=1"}})
	for _, ok := range []Request{
		{}, header("none"), header("dtd=1,cars=1"), header("cars=3"),
		{Header: Values{Preset: "half", HasPreset: true}},
	} {
		if _, err := p.Resolve(ok); err != nil {
			t.Errorf("%+v: %v", ok.Header, err)
		}
	}
	_, err := p.Resolve(header("cars=1,svhn=1"))
	var ie *InputError
	if !errors.As(err, &ie) || !errors.Is(err, ErrPresetsOnly) || ie.Key != KeyPreference {
		t.Errorf("a preference of its own: %v, want an *InputError with ErrPresetsOnly", err)
	}
}

// TestRoundedToGrid holds react's RoundedTo to its rule on random
// preferences: weights on the grid, summing to exactly the grid, each
// within one step of the original.
func TestRoundedToGrid(t *testing.T) {
	tasks := []string{"a", "b", "c", "d", "e"}
	for seed := range 200 {
		spec := ""
		for i, task := range tasks {
			if i > 0 {
				spec += ","
			}
			spec += fmt.Sprintf("%s=%d", task, (seed*7919+i*104729)%97)
		}
		pref, err := react.ParsePreference(spec, tasks)
		if err != nil {
			continue // all zero
		}
		for _, n := range []int{1, 3, 20, 1000} {
			r := pref.RoundedTo(n)
			sum := 0
			for i, w := range r.Weights() {
				k := w * float64(n)
				if k != float64(int(k+0.5)) {
					t.Fatalf("%s grid %d: weight %v is not on the grid", spec, n, w)
				}
				if d := w - pref.Weight(tasks[i]); d > 1/float64(n)+1e-12 || d < -1/float64(n)-1e-12 {
					t.Fatalf("%s grid %d: weight moved by %v", spec, n, d)
				}
				sum += int(k + 0.5)
			}
			if sum != n {
				t.Fatalf("%s grid %d: %d steps, want %d", spec, n, sum, n)
			}
		}
	}
}

// TestSolvesRunAtALowerPriority: a solve runs on a thread whose nice level
// is solveNiceness above the test's (on Linux).
func TestSolvesRunAtALowerPriority(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("thread priorities are set on Linux only")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	own, err := syscall.Getpriority(syscall.PRIO_PROCESS, syscall.Gettid())
	if err != nil {
		t.Fatal(err)
	}
	cache := NewCacheWith(CacheOptions{MaxPendingSolves: -1})
	var during int
	_, _, err = cache.Get(context.Background(), Key{Preference: "p"}, func(context.Context) (*Matrix, error) {
		during, err = syscall.Getpriority(syscall.PRIO_PROCESS, syscall.Gettid())
		return &Matrix{Key: "p", D: 1}, err
	})
	if err != nil {
		t.Fatal(err)
	}
	// Getpriority returns 20 - nice.
	if want := max(1, own-solveNiceness); during != want {
		t.Errorf("the solve's thread has priority %d (nice %d), want %d (nice %d)", during, 20-during, want, 20-want)
	}
	if now, _ := syscall.Getpriority(syscall.PRIO_PROCESS, syscall.Gettid()); now != own {
		t.Errorf("the caller's thread changed priority: %d, was %d", now, own)
	}
}
