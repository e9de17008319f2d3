package control

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/mergectl/react-triton/control/internal/admit"
)

// admission is one request of a scripted sequence: at seconds after the
// start, client key asks for preference pref; want is "" (served) or the
// reason it is shed.
type admission struct {
	at   float64
	key  string
	pref string
	want string
}

// runAdmissions sends each request of script to cache on a clock that
// reads the start plus its at, and checks the result. The start is read
// after the cache was made, so that buckets made then are not in the
// future of the script.
func runAdmissions(t *testing.T, cache *Cache, script []admission) {
	t.Helper()
	start := time.Now()
	solve := func(context.Context) (*Matrix, error) { return &Matrix{Key: "k", D: 1}, nil }
	for i, a := range script {
		at := start.Add(time.Duration(a.at * float64(time.Second)))
		cache.mu.Lock()
		cache.now = func() time.Time { return at }
		cache.mu.Unlock()
		_, _, err := cache.Get(WithClientKey(context.Background(), a.key), Key{Preference: a.pref}, solve)
		checkAdmitted(t, fmt.Sprintf("request %d (%+v)", i, a), err, a.want)
	}
}

// checkAdmitted reports an error of the request what unless want says
// it: "" for served, else the reason it was shed for.
func checkAdmitted(t *testing.T, what string, err error, want string) {
	t.Helper()
	var oe *OverloadError
	switch {
	case want == "" && err != nil:
		t.Errorf("%s: %v, want it served", what, err)
	case want != "" && (!errors.As(err, &oe) || oe.Reason != want):
		t.Errorf("%s: %v, want shed for %s", what, err, want)
	}
}

// TestCacheSolveRate: SolveRate is one bucket for every key: a key never
// seen is refused once the others have used it; it refills at the rate up
// to the burst (one second's worth by default); cached preferences cost
// nothing; a request refused by its key's rate costs the shared bucket
// nothing, and one refused by the shared bucket costs its key nothing.
func TestCacheSolveRate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opt    CacheOptions
		script []admission
		shed   map[string]int
	}{{
		name: "shared across keys, refilled up to the burst",
		opt:  CacheOptions{SolveRate: 1, SolveBurst: 2},
		script: []admission{
			{0, "alice", "a", ""}, {0, "bob", "b", ""}, {0, "carol", "c", ShedSolveRate},
			{0, "carol", "a", ""}, // cached
			{1, "dave", "d", ""}, {1, "erin", "e", ShedSolveRate},
			{10, "f", "f", ""}, {10, "g", "g", ""}, {10, "h", "h", ShedSolveRate}, // 9 s: still 2
		},
		shed: map[string]int{ShedSolveRate: 3},
	}, {
		name: "default burst: one second of the rate",
		opt:  CacheOptions{SolveRate: 3},
		script: []admission{
			{0, "a", "a", ""}, {0, "b", "b", ""}, {0, "c", "c", ""}, {0, "d", "d", ShedSolveRate},
			{0.34, "d", "d", ""}, {0.34, "e", "e", ShedSolveRate},
		},
		shed: map[string]int{ShedSolveRate: 2},
	}, {
		name: "default burst: the rate's ceiling",
		opt:  CacheOptions{SolveRate: 2.5},
		script: []admission{
			{0, "a", "a", ""}, {0, "b", "b", ""}, {0, "c", "c", ""}, {0, "d", "d", ShedSolveRate},
		},
		shed: map[string]int{ShedSolveRate: 1},
	}, {
		name: "default burst below one a second: one",
		opt:  CacheOptions{SolveRate: 0.5},
		script: []admission{
			{0, "a", "a", ""}, {0, "b", "b", ShedSolveRate},
			{1.9, "b", "b", ShedSolveRate}, {2, "b", "b", ""},
		},
		shed: map[string]int{ShedSolveRate: 2},
	}, {
		name: "with a key rate, a refusal costs the other bucket nothing",
		opt:  CacheOptions{KeyRate: 0.001, KeyBurst: 1, SolveRate: 1, SolveBurst: 2},
		script: []admission{
			{0, "alice", "a", ""}, {0, "alice", "b", ShedKeyRate},
			{0, "bob", "c", ""}, {0, "carol", "d", ShedSolveRate},
			{1, "carol", "d", ""}, {1, "alice", "e", ShedKeyRate},
		},
		shed: map[string]int{ShedKeyRate: 2, ShedSolveRate: 1},
	}, {
		name:   "no bound",
		opt:    CacheOptions{},
		script: []admission{{0, "a", "a", ""}, {0, "a", "b", ""}, {0, "a", "c", ""}, {0, "a", "d", ""}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			obs := &recordingCacheObserver{}
			tc.opt.MaxPendingSolves, tc.opt.Observer = -1, obs
			cache := NewCacheWith(tc.opt)
			runAdmissions(t, cache, tc.script)
			if shed, _, _ := obs.counts(); !maps.Equal(shed, tc.shed) {
				t.Errorf("sheds %v, want %v", shed, tc.shed)
			}
		})
	}
}

// TestCacheSolveRateSharedConcurrently: many keys at once, each with a
// bucket of its own far from empty, start exactly the shared burst of
// solves between them.
func TestCacheSolveRateSharedConcurrently(t *testing.T) {
	const burst, keys = 5, 40
	cache := NewCacheWith(CacheOptions{MaxPendingSolves: -1, KeyRate: 100, KeyBurst: 100, SolveRate: 0.001, SolveBurst: burst})
	solve := func(context.Context) (*Matrix, error) { return &Matrix{Key: "k", D: 1}, nil }
	errs := make(chan error, keys)
	for i := range keys {
		go func() {
			ctx := WithClientKey(context.Background(), fmt.Sprint("key", i))
			_, _, err := cache.Get(ctx, Key{Preference: fmt.Sprint("p", i)}, solve)
			errs <- err
		}()
	}
	served := 0
	for range keys {
		if err := <-errs; err == nil {
			served++
		} else if oe := (*OverloadError)(nil); !errors.As(err, &oe) || oe.Reason != ShedSolveRate {
			t.Errorf("%v, want served or shed for solve_rate", err)
		}
	}
	if served != burst {
		t.Errorf("%d of %d keys served, want the shared burst %d", served, keys, burst)
	}
}

// TestCacheReconfigureSolveRate: a reload that changes the rate or the
// burst starts a full bucket of the new one; one that keeps them keeps
// the bucket as it is; 0 lifts the bound.
func TestCacheReconfigureSolveRate(t *testing.T) {
	opt := CacheOptions{MaxPendingSolves: -1, SolveRate: 0.001, SolveBurst: 1}
	cache := NewCacheWith(opt)
	runAdmissions(t, cache, []admission{{0, "a", "a", ""}, {0, "b", "b", ShedSolveRate}})
	cache.Reconfigure(opt)
	runAdmissions(t, cache, []admission{{0, "b", "b", ShedSolveRate}})
	opt.SolveBurst = 2
	cache.Reconfigure(opt)
	runAdmissions(t, cache, []admission{{0, "b", "b", ""}, {0, "c", "c", ""}, {0, "d", "d", ShedSolveRate}})
	opt.SolveRate, opt.SolveBurst = 1000, 0
	cache.Reconfigure(opt)
	runAdmissions(t, cache, []admission{{0, "d", "d", ""}})
	cache.mu.Lock()
	if b := cache.solves.Burst; b != 1000 {
		t.Errorf("burst %v after a reload to 1000/s with burst 0, want 1000", b)
	}
	cache.mu.Unlock()
	opt.SolveRate = 0
	cache.Reconfigure(opt)
	var script []admission
	for i := range 2000 {
		script = append(script, admission{0, "a", fmt.Sprint("x", i), ""})
	}
	runAdmissions(t, cache, script)
}

// TestOverloadErrorMessages: each reason says whose share was used.
func TestOverloadErrorMessages(t *testing.T) {
	for reason, want := range map[string]string{
		ShedQueueFull:  "too many new preferences are waiting to be solved: try again later, or use a preset",
		ShedKeyRate:    "too many new preferences from this client: try again later, or use a preset",
		ShedSolveRate:  "too many new preferences from all clients: try again later, or use a preset",
		ShedSolveShare: "too many new preferences from all clients: try again later, or use a preset",
	} {
		if got := (&OverloadError{Reason: reason}).Error(); got != want {
			t.Errorf("%s: %q, want %q", reason, got, want)
		}
	}
}

// TestShedDelay: a refused request is answered after ShedDelay, or a
// margin before its deadline when that comes first, or when its client
// goes; with no delay at once; and a served one is never held.
func TestShedDelay(t *testing.T) {
	const delay = 120 * time.Millisecond
	solve := func(context.Context) (*Matrix, error) { return &Matrix{Key: "k", D: 1}, nil }
	for _, tc := range []struct {
		name     string
		delay    time.Duration
		deadline time.Duration // 0: none
		cancel   time.Duration // 0: never
		min, max time.Duration
		wantErr  bool
	}{
		{"held", delay, 0, 0, delay, delay + 100*time.Millisecond, true},
		{"not held", 0, 0, 0, 0, 30 * time.Millisecond, true},
		{"until just before the deadline", delay, 60 * time.Millisecond, 0, 60*time.Millisecond - admit.ShedMargin - 5*time.Millisecond, 60*time.Millisecond + 30*time.Millisecond, true},
		{"deadline nearer than the margin", delay, admit.ShedMargin / 2, 0, 0, 30 * time.Millisecond, true},
		{"client gone", delay, 0, 20 * time.Millisecond, 20 * time.Millisecond, 20*time.Millisecond + 60*time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cache := NewCacheWith(CacheOptions{MaxEntries: 4, MaxPendingSolves: -1, SolveRate: 1, SolveBurst: 1, ShedDelay: tc.delay})
			if _, _, err := cache.Get(context.Background(), Key{Preference: "first"}, solve); err != nil {
				t.Fatalf("the first solve: %v", err) // served at once: the burst's one token
			}
			ctx := context.Background()
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.deadline)
				defer cancel()
			}
			if tc.cancel > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				time.AfterFunc(tc.cancel, cancel)
			}
			start := time.Now()
			_, _, err := cache.Get(ctx, Key{Preference: "second"}, solve)
			took := time.Since(start)
			var oe *OverloadError
			if !errors.As(err, &oe) || oe.Reason != ShedSolveRate {
				t.Fatalf("err %v, want shed for %s", err, ShedSolveRate)
			}
			if took < tc.min || took > tc.max {
				t.Errorf("answered after %v, want %v to %v", took, tc.min, tc.max)
			}
			// A preference already held is served at once, whatever the delay.
			start = time.Now()
			if _, hit, err := cache.Get(context.Background(), Key{Preference: "first"}, solve); err != nil || !hit || time.Since(start) > 30*time.Millisecond {
				t.Errorf("a held preference: hit %v, %v, after %v", hit, err, time.Since(start))
			}
		})
	}
}

// TestCacheSolveRateQueueAndJoined: the queue is checked before the
// buckets, and requests that join a solve in flight start none: with one
// solver, no queue and a solve rate of burst 2, while a solve holds the
// solver, eight more requests for its preference join it (none shed,
// none charged) and three for another preference are shed queue_full
// (charged nothing); once it is done, one more new preference is admitted
// (the burst's second token) and the next is shed solve_rate.
func TestCacheSolveRateQueueAndJoined(t *testing.T) {
	const joiners = 8
	obs := &recordingCacheObserver{}
	cache := NewCacheWith(CacheOptions{MaxConcurrentSolves: 1, MaxPendingSolves: 0, SolveRate: 0.001, SolveBurst: 2, Observer: obs})
	entered, release := make(chan struct{}), make(chan struct{})
	blocking := func(context.Context) (*Matrix, error) {
		close(entered)
		<-release
		return &Matrix{Key: "a", D: 1}, nil
	}
	quick := func(context.Context) (*Matrix, error) { return &Matrix{Key: "k", D: 1}, nil }
	get := func(pref string, solve func(context.Context) (*Matrix, error)) error {
		_, _, err := cache.Get(context.Background(), Key{Preference: pref}, solve)
		return err
	}
	errs := make(chan error, joiners+1)
	go func() { errs <- get("a", blocking) }()
	<-entered
	for range joiners {
		go func() { errs <- get("a", quick) }()
	}
	p := cache.partition(Key{}.part(), "")
	deadline := time.Now().Add(10 * time.Second)
	for {
		cache.mu.Lock()
		waiting := 0
		if f := p.flights["a"]; f != nil {
			waiting = f.waiters
		}
		cache.mu.Unlock()
		if waiting == joiners+1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	for range 3 {
		var oe *OverloadError
		if err := get("b", quick); !errors.As(err, &oe) || oe.Reason != ShedQueueFull {
			t.Errorf("a new preference while the solver is busy: %v, want shed queue_full", err)
		}
	}
	close(release)
	for range joiners + 1 {
		if err := <-errs; err != nil {
			t.Errorf("a request for the preference being solved: %v, want it served by that solve", err)
		}
	}
	if err := get("c", quick); err != nil {
		t.Errorf("the burst's second new preference: %v, want it admitted", err)
	}
	var oe *OverloadError
	if err := get("d", quick); !errors.As(err, &oe) || oe.Reason != ShedSolveRate {
		t.Errorf("a third new preference: %v, want shed solve_rate", err)
	}
	if shed, _, _ := obs.counts(); !maps.Equal(shed, map[string]int{ShedQueueFull: 3, ShedSolveRate: 1}) {
		t.Errorf("sheds %v, want 3 queue_full and 1 solve_rate", shed)
	}
}

// TestCacheAdmitOrder: admission checks the queue, then the key's rate,
// then the cache's rate, then the solvers' time, and sheds for the first
// of them that is exhausted, taking no token of either rate's bucket and
// no time; a solve admitted takes one token of each bucket and no time
// (it pays when it ends). Every combination of the four, on a clock that
// stands still.
func TestCacheAdmitOrder(t *testing.T) {
	reasons := []string{ShedQueueFull, ShedKeyRate, ShedSolveRate, ShedSolveShare}
	const keyTokens, allTokens, timeLeft = 3.0, 5.0, 0.5
	for mask := range 1 << len(reasons) {
		exhausted := func(i int) bool { return mask&(1<<i) != 0 }
		want, name := "", ""
		for i, r := range reasons {
			if exhausted(i) {
				name += r + "+"
				if want == "" {
					want = r
				}
			}
		}
		if name == "" {
			name = "none+"
		}
		t.Run(name[:len(name)-1], func(t *testing.T) {
			obs := &recordingCacheObserver{}
			cache := NewCacheWith(CacheOptions{MaxConcurrentSolves: 1, MaxPendingSolves: 0, Observer: obs,
				KeyRate: 0.001, KeyBurst: 10, SolveRate: 0.001, SolveBurst: 10, SolveShare: 0.001, SolveShareBurst: time.Second})
			clock := newFakeClock()
			ctx := WithClientKey(context.Background(), "alice")
			p := cache.partition(Key{}.part(), "test")
			cache.mu.Lock()
			defer cache.mu.Unlock()
			cache.now = clock.now
			now := clock.now()
			key, all, budget := cache.keys.Bucket("alice", now), cache.solves.Bucket(now), cache.budget.Bucket(now)
			key.Tokens, all.Tokens, budget.Tokens = keyTokens, allTokens, timeLeft
			if exhausted(0) {
				cache.running = 1 // the one solver busy, no queue
			}
			if exhausted(1) {
				key.Tokens = 0.99
			}
			if exhausted(2) {
				all.Tokens = 0.99
			}
			if exhausted(3) {
				budget.Tokens = 0
			}
			wantKey, wantAll, wantTime := key.Tokens, all.Tokens, budget.Tokens
			if want == "" {
				wantKey, wantAll = wantKey-1, wantAll-1
			}
			err := cache.admit(ctx, p)
			checkAdmitted(t, "admit", err, want)
			if key.Tokens != wantKey || all.Tokens != wantAll || budget.Tokens != wantTime {
				t.Errorf("after admit: key %v, shared %v tokens, %v s left; want %v, %v, %v",
					key.Tokens, all.Tokens, budget.Tokens, wantKey, wantAll, wantTime)
			}
			wantShed := map[string]int{}
			if want != "" {
				wantShed[want] = 1
			}
			if shed, _, _ := obs.counts(); !maps.Equal(shed, wantShed) {
				t.Errorf("sheds %v, want %v", shed, wantShed)
			}
		})
	}
}
