package control

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is a clock that tests move: solves advance it by what they
// "cost"; with step set, every reading also moves it on by step.
type fakeClock struct {
	mu   sync.Mutex
	at   time.Time
	step time.Duration
}

func newFakeClock() *fakeClock { return &fakeClock{at: time.Unix(1_800_000_000, 0)} }

// now reads the clock (and moves it on by step).
func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.at
	c.at = c.at.Add(c.step)
	return t
}

// reach moves the clock on to t, if it is not there already.
func (c *fakeClock) reach(t time.Time) {
	c.mu.Lock()
	if t.After(c.at) {
		c.at = t
	}
	c.mu.Unlock()
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.at = c.at.Add(d)
	c.mu.Unlock()
}

// costlyRequest is one request of a script for the solvers' time: at
// seconds after the start it asks for pref, whose solve, if it runs,
// takes cost seconds; want is "" (served) or the reason it is shed.
type costlyRequest struct {
	at, cost float64
	pref     string
	want     string
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// newBudgetCache returns a cache with opt (no queue bound) on a fake clock.
func newBudgetCache(opt CacheOptions) (*Cache, *fakeClock) {
	opt.MaxPendingSolves = -1
	cache := NewCacheWith(opt)
	clock := newFakeClock()
	cache.mu.Lock()
	cache.now = clock.now
	cache.mu.Unlock()
	return cache, clock
}

// runCostly sends each request of script in turn, at its time or when the
// solve before it ends (one solver), its solve moving the clock on by its
// cost, and returns the errors and the clock's reading at the end.
func runCostly(cache *Cache, clock *fakeClock, script []costlyRequest) ([]error, time.Duration) {
	start := clock.now()
	errs := make([]error, len(script))
	for i, r := range script {
		clock.reach(start.Add(seconds(r.at)))
		solve := func(context.Context) (*Matrix, error) {
			clock.advance(seconds(r.cost))
			return &Matrix{Key: r.pref, D: 1}, nil
		}
		_, _, errs[i] = cache.Get(context.Background(), Key{Preference: r.pref}, solve)
	}
	return errs, clock.now().Sub(start)
}

// TestCacheSolveShare: a solve is admitted while the solvers' time holds
// any; it pays its duration when it ends, into debt if need be; the
// budget fills at share × solvers seconds a second up to the burst, also
// while a solve runs; cached preferences cost nothing. Requests at one
// time follow each other's solves (runCostly).
func TestCacheSolveShare(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opt    CacheOptions
		script []costlyRequest
	}{{
		// 0.5 s a second, burst 0.1 s: a 0.3 s solve leaves 0.1 + 0.15 -
		// 0.3 (filled while it ran, up to the burst first) = -0.2 at 0.3 s,
		// paid off at 0.7 s.
		name: "debt paid off at the share",
		opt:  CacheOptions{SolveShare: 0.5, MaxConcurrentSolves: 1, SolveShareBurst: 100 * time.Millisecond},
		script: []costlyRequest{
			{0, 0.3, "a", ""}, {0.3, 0.01, "b", ShedSolveShare}, {0.3, 0, "a", ""},
			{0.69, 0.01, "b", ShedSolveShare}, {0.71, 0.01, "b", ""},
		},
	}, {
		// Two solvers: 2 × 0.25 = 0.5 s a second, as above.
		name: "the share of every solver",
		opt:  CacheOptions{SolveShare: 0.25, MaxConcurrentSolves: 2, SolveShareBurst: 100 * time.Millisecond},
		script: []costlyRequest{
			{0, 0.3, "a", ""}, {0.69, 0.01, "b", ShedSolveShare}, {0.71, 0.01, "b", ""},
		},
	}, {
		// Burst 0: one second's worth, 0.2 s. Back to back, 0.1 s solves
		// leave 0.2 - 0.1 = 0.1, 0.1 + 0.02 - 0.1 = 0.02, 0.02 + 0.02 -
		// 0.1 < 0: three, not a fourth (a burst of 0.3 s would admit it).
		name: "default burst: one second of the share",
		opt:  CacheOptions{SolveShare: 0.2, MaxConcurrentSolves: 1},
		script: []costlyRequest{
			{0, 0.1, "a", ""}, {0, 0.1, "b", ""}, {0, 0.1, "c", ""}, {0, 0.1, "d", ShedSolveShare},
		},
	}, {
		// A share does not save up past its burst: after an hour, 0.2 s;
		// back to back, 0.11 s solves leave 0.09, 0.035, -0.02: three.
		name: "no more than the burst after a quiet hour",
		opt:  CacheOptions{SolveShare: 0.5, MaxConcurrentSolves: 1, SolveShareBurst: 200 * time.Millisecond},
		script: []costlyRequest{
			{3600, 0.11, "a", ""}, {3600, 0.11, "b", ""}, {3600, 0.11, "c", ""}, {3600, 0.11, "d", ShedSolveShare},
		},
	}, {
		name:   "no bound",
		opt:    CacheOptions{MaxConcurrentSolves: 1},
		script: []costlyRequest{{0, 10, "a", ""}, {0, 10, "b", ""}, {0, 10, "c", ""}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			cache, clock := newBudgetCache(tc.opt)
			errs, _ := runCostly(cache, clock, tc.script)
			for i, err := range errs {
				checkAdmitted(t, fmt.Sprintf("request %d (%+v)", i, tc.script[i]), err, tc.script[i].want)
			}
		})
	}
}

// TestCacheSolveShareHoldsTheShare: under any stream of new preferences
// (random arrivals, random costs), the solver time admitted over a
// stretch T is at most share × solvers × T + the burst + one solve (the
// one that empties the budget); and while demand never stops, at least
// share × solvers × T − the burst − one solve − what fills while the
// budget waits for the next request after each solve: the budget bounds
// the solvers' time, it does not waste it.
func TestCacheSolveShareHoldsTheShare(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 20 {
		share := 0.05 + 0.5*rng.Float64()
		burst := seconds(0.5 * rng.Float64())
		maxCost := 0.01 + 0.2*rng.Float64()
		cache, clock := newBudgetCache(CacheOptions{SolveShare: share, MaxConcurrentSolves: 1, SolveShareBurst: burst})
		const gap = 0.002 // far more demand than the share
		var script []costlyRequest
		at := 0.0
		for i := range 3000 {
			at += gap * rng.Float64()
			script = append(script, costlyRequest{at: at, cost: maxCost * rng.Float64(), pref: fmt.Sprint(i)})
		}
		used, admitted := 0.0, 0
		errs, took := runCostly(cache, clock, script)
		for i, err := range errs {
			if err == nil {
				used += script[i].cost
				admitted++
			} else if oe := (*OverloadError)(nil); !errors.As(err, &oe) || oe.Reason != ShedSolveShare {
				t.Fatalf("trial %d: %v, want served or shed for solve_share", trial, err)
			}
		}
		span := took.Seconds()
		hi := share*span + burst.Seconds() + maxCost
		lo := share*span - burst.Seconds() - maxCost - float64(admitted)*gap*share
		if used > hi || used < lo {
			t.Errorf("trial %d: share %.3f, burst %v, %.1f s: solvers busy %.3f s, want within [%.3f, %.3f]",
				trial, share, burst, span, used, lo, hi)
		}
	}
}

// TestCacheSolveShareFormationPays: a background formation of W_p pays
// its time too, and while the solvers' time is spent a new preference is
// not formed at its first use.
func TestCacheSolveShareFormationPays(t *testing.T) {
	comps := testComponents(t, 6, 40, tasks3...)
	t.Run("formation paid", func(t *testing.T) {
		// A clock that moves one second at each reading: the solve and the
		// formation each take exactly one second of it, and a share of
		// 10⁻¹² fills nothing measurable meanwhile.
		cache, clock := newBudgetCache(CacheOptions{SolveShare: 1e-12, SolveShareBurst: time.Hour, MaxEntries: 4})
		clock.step = time.Second
		p := newTestProfile(t, ProfileSpec{Components: comps, Cache: cache})
		m := get(t, p, "cars=1,svhn=3")
		waitFormed(t, m)
		st := cache.Stats()
		if spent := time.Hour.Seconds() - st.SolveTime; !st.HasSolveShare || math.Abs(spent-2) > 1e-6 {
			t.Errorf("Stats: %+v: solvers' time spent %.9f s, want 2 (the solve's second and the formation's)", st, time.Hour.Seconds()-st.SolveTime)
		}
	})
	t.Run("failed formation paid", func(t *testing.T) {
		// dtd's cross-covariance 10⁴⁰ times the others': its W_p is beyond
		// float32's range, so its formation fails (a second on this clock), and
		// the factored form keeps answering.
		comps := testComponents(t, 6, 40, tasks3...)
		dtd, _ := comps.Task("dtd")
		dtd.S.Scale(1e40, dtd.S)
		cache, clock := newBudgetCache(CacheOptions{SolveShare: 1e-12, SolveShareBurst: time.Hour, MaxEntries: 4})
		clock.step = time.Second
		obs := &countingObserver{}
		p := newTestProfile(t, ProfileSpec{Components: comps, Cache: cache, Default: "cars=1", Observer: obs})
		m := get(t, p, "dtd=1")
		for deadline := time.Now().Add(10 * time.Second); obs.formed.Load() == 0 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		if n := obs.formed.Load(); n != 1 || m.Formed() {
			t.Fatalf("%d formations observed, formed %v; want one, failed", n, m.Formed())
		}
		if spent := spentTime(cache); math.Abs(spent-2) > 1e-6 {
			t.Errorf("solvers' time spent %.9f s, want 2 (the solve's second and the failed formation's)", spent)
		}
	})
	t.Run("spent: formed at the second use", func(t *testing.T) {
		cache, clock := newBudgetCache(CacheOptions{SolveShare: 1e-12, SolveShareBurst: time.Nanosecond, MaxEntries: 4})
		clock.step = time.Millisecond
		cache.paid(time.Second)
		p := newTestProfile(t, ProfileSpec{Components: comps, Cache: cache})
		// The budget is spent, so the first request's solve is shed.
		c, err := p.Resolve(header("cars=1,svhn=3"))
		if err != nil {
			t.Fatal(err)
		}
		var oe *OverloadError
		if _, err := p.Matrix(context.Background(), c); !errors.As(err, &oe) || oe.Reason != ShedSolveShare {
			t.Fatalf("Matrix with the solvers' time spent: %v, want shed for solve_share", err)
		}
		// Time left for one solve, whose millisecond spends it again.
		cache.mu.Lock()
		cache.budget.Bucket(cache.now()).Tokens = 1e-9
		cache.mu.Unlock()
		m := get(t, p, "cars=1,svhn=3")
		// formLater takes the formation's token before it returns.
		if len(cache.forming) == 1 || m.Formed() {
			t.Fatal("a formation started at the first use with the solvers' time spent")
		}
		if cache.idle() {
			t.Fatal("idle with the solvers' time spent")
		}
		get(t, p, "cars=1,svhn=3") // the second use forms it
		waitFormed(t, m)
	})
}

// TestCacheReconfigureSolveShare: a reload that changes the share, its
// burst or the number of solvers starts a full budget of the new one; one
// that keeps them keeps the debt; 0 lifts the bound.
func TestCacheReconfigureSolveShare(t *testing.T) {
	opt := CacheOptions{SolveShare: 0.001, MaxConcurrentSolves: 1, SolveShareBurst: 100 * time.Millisecond}
	cache, clock := newBudgetCache(opt)
	served := func(pref string) bool {
		errs, _ := runCostly(cache, clock, []costlyRequest{{0, 1, pref, ""}})
		return errs[0] == nil
	}
	steps := []struct {
		change func()
		want   bool
	}{
		{func() {}, true},  // the burst, then a second of debt
		{func() {}, false}, // still in debt
		{func() {}, false}, // a reload that changes nothing keeps it
		{func() { opt.SolveShareBurst = time.Second }, true},
		{func() { opt.SolveShare = 0.002 }, true},
		{func() { opt.MaxConcurrentSolves = 2 }, true},
		{func() {}, false},
		{func() { opt.SolveShare = 0 }, true},
		{func() {}, true},
	}
	for i, s := range steps {
		s.change()
		cache.Reconfigure(opt)
		if got := served(fmt.Sprint("p", i)); got != s.want {
			t.Errorf("step %d (%+v): served %v, want %v", i, opt, got, s.want)
		}
	}
}

// TestCacheReconfigureSolveShareStats: the time left is reported only
// with a share, and a reload from none to a share starts it full (the
// burst), so that the gauge appears after such a reload; a burst of 0 is
// one second of the share of the solvers the reload sets.
func TestCacheReconfigureSolveShareStats(t *testing.T) {
	opt := CacheOptions{MaxConcurrentSolves: 2}
	cache, _ := newBudgetCache(opt)
	for _, s := range []struct {
		share, burst float64 // the new options, in seconds
		solvers      int
		has          bool
		left         float64
	}{
		{0, 0, 2, false, 0},
		{0.25, 3, 2, true, 3},
		{0.25, 0, 2, true, 0.5}, // one second of 0.25 × 2 solvers
		{0, 0, 2, false, 0},
		{0.5, 0, 2, true, 1},
		{0.5, 0, 4, true, 2}, // the new solvers' second
	} {
		opt.SolveShare, opt.SolveShareBurst, opt.MaxConcurrentSolves = s.share, seconds(s.burst), s.solvers
		cache.Reconfigure(opt)
		if st := cache.Stats(); st.HasSolveShare != s.has || st.SolveTime != s.left {
			t.Errorf("after a reload to share %v, burst %v s, %d solvers: HasSolveShare %v, SolveTime %v; want %v, %v",
				s.share, s.burst, s.solvers, st.HasSolveShare, st.SolveTime, s.has, s.left)
		}
	}
}

// spentTime is the solvers' time a cache on a fake clock has been paid
// since its budget of an hour was full (its share, 10⁻¹², fills nothing
// measurable).
func spentTime(cache *Cache) float64 {
	return time.Hour.Seconds() - cache.Stats().SolveTime
}

// TestCacheSolveSharePays: a solve pays the time it ran, whether it served
// or failed, and only that: not the time it waited for a solver, and
// nothing when its requests all went before it ran.
func TestCacheSolveSharePays(t *testing.T) {
	opt := CacheOptions{SolveShare: 1e-12, SolveShareBurst: time.Hour, MaxConcurrentSolves: 1}
	costing := func(clock *fakeClock, cost time.Duration, err error) func(context.Context) (*Matrix, error) {
		return func(context.Context) (*Matrix, error) {
			clock.advance(cost)
			if err != nil {
				return nil, err
			}
			return &Matrix{Key: "k", D: 1}, nil
		}
	}
	for _, tc := range []struct {
		name string
		err  error
	}{{"served", nil}, {"failed", errors.New("no factorisation")}} {
		t.Run(tc.name, func(t *testing.T) {
			cache, clock := newBudgetCache(opt)
			_, _, err := cache.Get(context.Background(), Key{Preference: "a"}, costing(clock, 1500*time.Millisecond, tc.err))
			if err != tc.err {
				t.Fatalf("Get: %v, want %v", err, tc.err)
			}
			if spent := spentTime(cache); math.Abs(spent-1.5) > 1e-6 {
				t.Errorf("solvers' time spent %.9f s, want 1.5 (the solve's)", spent)
			}
		})
	}

	t.Run("clock stepped back: nothing", func(t *testing.T) {
		cache, clock := newBudgetCache(CacheOptions{SolveShare: 0.5, SolveShareBurst: time.Second, MaxConcurrentSolves: 1})
		if _, _, err := cache.Get(context.Background(), Key{Preference: "a"}, costing(clock, -time.Minute, nil)); err != nil {
			t.Fatal(err)
		}
		if st := cache.Stats(); st.SolveTime != 1 {
			t.Errorf("%v s left after a solve that took -1m, want 1 (the burst, full)", st.SolveTime)
		}
	})

	// blocked starts a solve of a that holds the one solver until release
	// is closed, then costs a second; it returns the request's error.
	blocked := func(t *testing.T, cache *Cache, clock *fakeClock) (release chan struct{}, done chan error) {
		t.Helper()
		entered, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
		go func() {
			_, _, err := cache.Get(context.Background(), Key{Preference: "a"}, func(context.Context) (*Matrix, error) {
				close(entered)
				<-release
				clock.advance(time.Second)
				return &Matrix{Key: "a", D: 1}, nil
			})
			done <- err
		}()
		<-entered
		return release, done
	}
	// waitPending waits until n solves wait for the solver, without
	// reading the clock.
	waitPending := func(t *testing.T, cache *Cache, n int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			cache.mu.Lock()
			pending := cache.pending
			cache.mu.Unlock()
			if pending == n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d solves pending, want %d", pending, n)
			}
		}
	}

	t.Run("queued: the wait not paid", func(t *testing.T) {
		cache, clock := newBudgetCache(opt)
		release, first := blocked(t, cache, clock)
		second := make(chan error, 1)
		go func() {
			_, _, err := cache.Get(context.Background(), Key{Preference: "b"}, costing(clock, 250*time.Millisecond, nil))
			second <- err
		}()
		waitPending(t, cache, 1)
		time.Sleep(20 * time.Millisecond) // its solve parked, waiting for the solver
		close(release)
		if err := errors.Join(<-first, <-second); err != nil {
			t.Fatal(err)
		}
		if spent := spentTime(cache); math.Abs(spent-1.25) > 1e-6 {
			t.Errorf("solvers' time spent %.9f s, want 1.25 (1 + 0.25, not the second's wait for the first)", spent)
		}
	})

	t.Run("cancelled while queued: nothing", func(t *testing.T) {
		cache, clock := newBudgetCache(opt)
		release, first := blocked(t, cache, clock)
		ctx, cancel := context.WithCancel(context.Background())
		second := make(chan error, 1)
		ran := make(chan struct{}, 1)
		go func() {
			_, _, err := cache.Get(ctx, Key{Preference: "b"}, func(context.Context) (*Matrix, error) {
				ran <- struct{}{}
				clock.advance(time.Hour)
				return &Matrix{Key: "b", D: 1}, nil
			})
			second <- err
		}()
		waitPending(t, cache, 1)
		clock.advance(10 * time.Second) // the second's wait: the first's run
		cancel()
		if err := <-second; !errors.Is(err, context.Canceled) {
			t.Fatalf("the cancelled request: %v, want context.Canceled", err)
		}
		waitPending(t, cache, 0)
		close(release)
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		if len(ran) != 0 {
			t.Fatal("the cancelled solve ran")
		}
		if spent := spentTime(cache); math.Abs(spent-11) > 1e-6 {
			t.Errorf("solvers' time spent %.9f s, want 11 (the first solve's run, during which the second waited)", spent)
		}
	})

	t.Run("cancelled before it ran: nothing", func(t *testing.T) {
		// Requests gone before their solve starts: each solve is dropped,
		// whether it had the solver already or not, and pays nothing; on
		// a clock that moves a second at every reading, a solve that ran
		// pays exactly one (its start and end).
		cache, clock := newBudgetCache(opt)
		clock.step = time.Second
		p := cache.partition(Key{}.part(), "")
		gone, cancel := context.WithCancel(context.Background())
		cancel()
		var ran atomic.Int64
		solve := func(context.Context) (*Matrix, error) {
			ran.Add(1)
			return &Matrix{Key: "k", D: 1}, nil
		}
		for i := range 50 {
			pref := fmt.Sprint("p", i)
			// Canceled, or served where the solve ran and ended first.
			if _, _, err := cache.Get(gone, Key{Preference: pref}, solve); err != nil && !errors.Is(err, context.Canceled) {
				t.Fatalf("%s: %v, want context.Canceled", pref, err)
			}
			// Wait for its run to end, without reading the clock.
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Microsecond) {
				cache.mu.Lock()
				_, flying := p.flights[pref]
				cache.mu.Unlock()
				if !flying {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: its solve never ended", pref)
				}
			}
		}
		// 10⁻¹² a second fills nothing measurable even over these steps.
		if spent, want := spentTime(cache), float64(ran.Load()); math.Abs(spent-want) > 1e-6 {
			t.Errorf("solvers' time spent %.9f s, want %v (one second for each of the %d solves that ran)", spent, want, ran.Load())
		}
	})
}

// TestCacheSolveShareAtZero: a new solve needs time left, more than none:
// at 0 or in debt it is shed, and a new preference's W_p is not formed at
// once (Cache.idle); any time left admits it. idle also needs no solve
// waiting for a solver.
func TestCacheSolveShareAtZero(t *testing.T) {
	for _, tc := range []struct {
		left     float64
		pending  int
		admitted bool
		idle     bool
	}{
		{-1, 0, false, false},
		{0, 0, false, false},
		{1e-9, 0, true, true},
		{1, 0, true, true},
		{1, 1, true, false},
	} {
		cache, clock := newBudgetCache(CacheOptions{SolveShare: 0.001, MaxConcurrentSolves: 1, SolveShareBurst: time.Second})
		p := cache.partition(Key{}.part(), "")
		cache.mu.Lock()
		cache.budget.Bucket(clock.now()).Tokens = tc.left
		cache.pending = tc.pending
		err := cache.admit(context.Background(), p)
		cache.mu.Unlock()
		want := ShedSolveShare
		if tc.admitted {
			want = ""
		}
		checkAdmitted(t, fmt.Sprintf("%v s left, %d pending", tc.left, tc.pending), err, want)
		if got := cache.idle(); got != tc.idle {
			t.Errorf("%v s left, %d pending: idle %v, want %v", tc.left, tc.pending, got, tc.idle)
		}
	}
}

// TestCacheSolveShareAdmittedInFlight: a solve pays when it ends, so the
// solves admitted while time is left, before any of them ends, all run:
// with one solver and three waiting, four new preferences at once are
// admitted on a budget that one of them overdraws, the fifth is shed for
// the queue, and once they have paid the next is shed for the debt. The
// overdraft is at most max_concurrent_solves + max_pending_solves solves.
func TestCacheSolveShareAdmittedInFlight(t *testing.T) {
	cache, clock := newBudgetCache(CacheOptions{SolveShare: 1e-12, SolveShareBurst: 100 * time.Millisecond, MaxConcurrentSolves: 1})
	cache.Reconfigure(CacheOptions{SolveShare: 1e-12, SolveShareBurst: 100 * time.Millisecond, MaxConcurrentSolves: 1, MaxPendingSolves: 3})
	release := make(chan struct{})
	solve := func(context.Context) (*Matrix, error) {
		<-release
		clock.advance(time.Second)
		return &Matrix{Key: "k", D: 1}, nil
	}
	errs := make(chan error, 4)
	for i := range 4 {
		go func() {
			_, _, err := cache.Get(context.Background(), Key{Preference: fmt.Sprint("p", i)}, solve)
			errs <- err
		}()
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if st := cache.Stats(); st.Pending+st.Running == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("four solves not admitted")
		}
	}
	_, _, err := cache.Get(context.Background(), Key{Preference: "fifth"}, solve)
	checkAdmitted(t, "a fifth new preference with four in flight", err, ShedQueueFull)
	close(release)
	for range 4 {
		if err := <-errs; err != nil {
			t.Errorf("a solve admitted while time was left: %v", err)
		}
	}
	if left := cache.Stats().SolveTime; math.Abs(left-(0.1-4)) > 1e-6 {
		t.Errorf("%.9f s left, want 0.1 - 4 (four solves of a second each)", left)
	}
	_, _, err = cache.Get(context.Background(), Key{Preference: "sixth"}, solve)
	checkAdmitted(t, "a new preference in debt", err, ShedSolveShare)
}
