package control

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mergectl/react-triton/problem"
	"github.com/mergectl/react-triton/react"
)

func header(spec string) Request {
	return Request{Header: Values{Preference: spec, HasPreference: true}}
}

func TestPinnedAndCachedLookups(t *testing.T) {
	obs := &countingObserver{}
	p := newTestProfile(t, ProfileSpec{Default: "cars=1", Presets: map[string]string{"a": "dtd=1", "b": "dtd=2"}, Observer: obs})
	// The default and the two presets (one matrix each) are solved at build time.
	if got := obs.solves.Load(); got != 2 {
		t.Fatalf("NewProfile solved %d times, want 2 (the default and one per distinct preset)", got)
	}
	ctx := context.Background()
	c, _ := p.Resolve(Request{})
	if _, err := p.Matrix(ctx, c); err != nil {
		t.Fatal(err)
	}
	if obs.count(LookupPinned) != 1 || obs.solves.Load() != 2 {
		t.Errorf("default: lookups %v, solves %d; want one pinned lookup and no solve", obs.lookups, obs.solves.Load())
	}
	// Two spellings of one preference share one matrix, solved once.
	c1, _ := p.Resolve(header("cars=1,dtd=1"))
	c2, _ := p.Resolve(header(" dtd = 0.5 , cars=0.5"))
	m1, err := p.Matrix(ctx, c1)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := p.Matrix(ctx, c2)
	if err != nil {
		t.Fatal(err)
	}
	if m1 != m2 || obs.solves.Load() != 3 || obs.count(LookupMiss) != 1 || obs.count(LookupHit) != 1 {
		t.Errorf("same preference: same matrix %v, solves %d, lookups %v; want the same matrix, 3 solves, 1 miss, 1 hit",
			m1 == m2, obs.solves.Load(), obs.lookups)
	}
}

func TestSingleflight(t *testing.T) {
	obs := &countingObserver{}
	p := newTestProfile(t, ProfileSpec{Observer: obs})
	c, err := p.Resolve(header("cars=1,svhn=3"))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	ms := make([]*Matrix, 32)
	for i := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, err := p.Matrix(context.Background(), c)
			if err != nil {
				t.Error(err)
			}
			ms[i] = m
		}()
	}
	wg.Wait()
	if n := obs.solves.Load(); n != 1 {
		t.Errorf("32 concurrent requests for one new preference solved %d times, want 1", n)
	}
	// Each got the one factored matrix or, once formed in the background,
	// the one formed matrix.
	seen := map[*Matrix]bool{}
	for _, m := range ms {
		seen[m] = true
	}
	if len(seen) > 2 {
		t.Errorf("32 concurrent requests got %d different matrices, want at most 2 (factored, formed)", len(seen))
	}
}

func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	cache, err := NewCache(2)
	if err != nil {
		t.Fatal(err)
	}
	obs := &countingObserver{}
	p := newTestProfile(t, ProfileSpec{Cache: cache, Observer: obs})
	ctx := context.Background()
	get := func(spec string) {
		c, err := p.Resolve(header(spec))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Matrix(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	get("cars=1")
	get("dtd=1")
	get("cars=1") // cars is now the most recent
	get("svhn=1") // evicts dtd
	if cache.Len() != 2 {
		t.Errorf("Len = %d, want 2", cache.Len())
	}
	before := obs.solves.Load()
	get("cars=1")
	if obs.solves.Load() != before {
		t.Error("cars=1 was evicted, want dtd=1 evicted")
	}
	get("dtd=1")
	if obs.solves.Load() != before+1 {
		t.Error("dtd=1 was still cached")
	}
	if _, err := NewCache(0); err == nil {
		t.Error("NewCache(0) succeeded")
	}
}

func TestProfilesShareCacheByContent(t *testing.T) {
	comps := testComponents(t, 6, 40, tasks3...)
	cache, _ := NewCache(8)
	obs := &countingObserver{}
	spec := ProfileSpec{Components: comps, Checksum: "abc", Cache: cache, Observer: obs}
	p1 := newTestProfile(t, spec)
	p2 := newTestProfile(t, spec) // a reload of the same file
	spec.Options = react.Options{Beta: 1, Normalization: react.NormSum}
	p3 := newTestProfile(t, spec) // another β
	spec.Options = react.Options{Beta: comps.Beta, Normalization: react.NormMean}
	p4 := newTestProfile(t, spec) // the same β, the other normalisation
	ctx := context.Background()
	c, _ := p1.Resolve(header("cars=1,dtd=1"))
	m1, _ := p1.Matrix(ctx, c)
	m2, _ := p2.Matrix(ctx, c)
	m3, _ := p3.Matrix(ctx, c)
	m4, _ := p4.Matrix(ctx, c)
	if m1 != m2 {
		t.Error("a profile of the same file, β and normalisation did not reuse the cached W_p")
	}
	if m3 == m1 || m4 == m1 || m4 == m3 || obs.solves.Load() != 3 {
		t.Errorf("another β or normalisation: same matrix (β %v, normalisation %v), solves %d; want a new solve each",
			m3 == m1, m4 == m1, obs.solves.Load())
	}
}

// TestGetHonoursContextAndKeepsAFinishedSolve: a request that leaves gets
// its context's error at once; the solve it started, already running, is
// told (its context is cancelled) and its result, which came anyway, is
// kept for the requests that follow.
func TestGetHonoursContextAndKeepsAFinishedSolve(t *testing.T) {
	cache, _ := NewCache(4)
	key := Key{Preference: "x=1"}
	release := make(chan struct{})
	cancelled := make(chan bool, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, _, err := cache.Get(ctx, key, func(sctx context.Context) (*Matrix, error) {
			<-release
			cancelled <- sctx.Err() != nil
			return &Matrix{Key: "x=1"}, nil
		})
		done <- err
	}()
	time.Sleep(10 * time.Millisecond)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Get after cancel = %v, want context.Canceled", err)
	}
	close(release)
	if !<-cancelled {
		t.Error("the solve's context was not cancelled when its only request left")
	}
	deadline := time.Now().Add(5 * time.Second)
	for cache.Len() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	m, hit, err := cache.Get(context.Background(), key, func(context.Context) (*Matrix, error) { return nil, errors.New("solved twice") })
	if err != nil || !hit || m.Key != "x=1" {
		t.Errorf("after the abandoned solve finished: %v, hit %v, %v; want the cached matrix", m, hit, err)
	}
}

func TestNewProfileReportsEveryProblem(t *testing.T) {
	comps := testComponents(t, 6, 40, tasks3...)
	cache, _ := NewCache(4)
	_, err := NewProfile(context.Background(), ProfileSpec{
		Name: "zoo", Components: comps, Options: react.DefaultOptions(comps), Cache: cache,
		Default: "cars=1,foo=1",
		Presets: map[string]string{"ok": "dtd=1", "bad": "dtd=x", "neg": "svhn=-2"},
	})
	if err == nil {
		t.Fatal("NewProfile accepted a bad default and bad presets")
	}
	var fields []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var fe *problem.Problem
		if !errors.As(e, &fe) {
			t.Fatalf("%v is not a *problem.Problem", e)
		}
		fields = append(fields, fe.Path)
	}
	if got := strings.Join(fields, " "); got != "default_preference presets.bad presets.neg" {
		t.Errorf("fields = %s, want default_preference presets.bad presets.neg", got)
	}
}

func TestIllConditionedPreferenceIsASolveError(t *testing.T) {
	// β = 0 and fewer samples than D: C_t is singular.
	comps := testComponents(t, 6, 3, tasks3...)
	p := newTestProfile(t, ProfileSpec{Components: comps, Options: react.Options{Beta: 0, Normalization: react.NormSum}})
	c, err := p.Resolve(header("cars=1"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Matrix(context.Background(), c)
	var se *react.SolveError
	if !errors.As(err, &se) {
		t.Fatalf("Matrix = %v, want a *react.SolveError", err)
	}
}

func TestIsOwnKey(t *testing.T) {
	for k, want := range map[string]bool{
		"react-preference": true, "React-Preset": true, "REACT-ARM": true, "react-": true,
		"react": false, "x-react-preference": false, "": false, "reactpreference": false,
	} {
		if IsOwnKey(k) != want {
			t.Errorf("IsOwnKey(%q) = %v", k, !want)
		}
	}
}

// TestRationedSolvesFormOnSecondUse: with a rate of solves set, per key
// or for the whole cache, a new preference is answered through its
// factorisation and not formed until it is used again; without one, it is
// formed at once.
func TestRationedSolvesFormOnSecondUse(t *testing.T) {
	comps := testComponents(t, 6, 40, tasks3...)
	for _, tc := range []struct {
		name    string
		opt     CacheOptions
		atFirst bool
	}{
		{"no rate", CacheOptions{}, true},
		{"solve rate", CacheOptions{SolveRate: 100}, false},
		{"key rate", CacheOptions{KeyRate: 100, KeyBurst: 10}, false},
	} {
		obs := &countingObserver{}
		tc.opt.MaxEntries, tc.opt.MaxPendingSolves = 4, -1
		cache := NewCacheWith(tc.opt)
		p := newTestProfile(t, ProfileSpec{Components: comps, Cache: cache, Observer: obs})
		c, err := p.Resolve(header("cars=1,svhn=3"))
		if err != nil {
			t.Fatal(err)
		}
		m, err := p.Matrix(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		// formLater takes the formation's token before it returns.
		if started := len(cache.forming) == 1 || m.Formed(); started != tc.atFirst {
			t.Fatalf("%s: formation started at the first use: %v", tc.name, started)
		}
		if !tc.atFirst {
			checkApply(t, "factored", m, referenceW(t, comps, comps.Beta, map[string]float64{"cars": 0.25, "svhn": 0.75}))
			if _, err := p.Matrix(context.Background(), c); err != nil {
				t.Fatal(err)
			}
		}
		deadline := time.Now().Add(10 * time.Second)
		for !m.Formed() && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if !m.Formed() || obs.formed.Load() != 1 {
			t.Errorf("%s: formed %v, %d formations, want one", tc.name, m.Formed(), obs.formed.Load())
		}
	}
}

// TestNewPreferenceServedFactoredThenFormed: while no formation can run, a
// new preference is answered through its factorisation; once one can, a
// later lookup starts it, the same matrix switches to the formed W_p, and
// it is formed once.
func TestNewPreferenceServedFactoredThenFormed(t *testing.T) {
	comps := testComponents(t, 6, 40, tasks3...)
	obs := &countingObserver{}
	cache, _ := NewCache(4)
	p := newTestProfile(t, ProfileSpec{Components: comps, Cache: cache, Observer: obs})
	c, err := p.Resolve(header("cars=2,svhn=1"))
	if err != nil {
		t.Fatal(err)
	}
	cache.forming <- struct{}{} // a formation under way elsewhere
	m, err := p.Matrix(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if m.Formed() || m.Matrix() != nil || obs.formed.Load() != 0 {
		t.Fatal("formed while no formation could run")
	}
	ref := referenceW(t, comps, comps.Beta, map[string]float64{"cars": 2.0 / 3, "svhn": 1.0 / 3})
	checkApply(t, "factored", m, ref)

	<-cache.forming
	if _, err := p.Matrix(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !m.Formed() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if !m.Formed() {
		t.Fatal("not formed within 10 s")
	}
	checkApply(t, "formed", m, ref)
	for i := 0; i < 5; i++ {
		if _, err := p.Matrix(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	if n := obs.formed.Load(); n != 1 {
		t.Errorf("formed %d times, want 1", n)
	}
	if n := obs.solves.Load(); n != 1 {
		t.Errorf("factorised %d times, want 1", n)
	}
}

// TestCacheBoundsConcurrentSolves: misses on many keys at once run at most
// GOMAXPROCS solves at a time.
func TestCacheBoundsConcurrentSolves(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	cache, _ := NewCache(64)
	var running, peak atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, err := cache.Get(context.Background(), Key{Preference: fmt.Sprint(i)}, func(context.Context) (*Matrix, error) {
				n := running.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				time.Sleep(5 * time.Millisecond)
				running.Add(-1)
				return &Matrix{Key: fmt.Sprint(i)}, nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if p := peak.Load(); p > 2 || p < 1 {
		t.Errorf("%d solves ran at once with GOMAXPROCS 2, want 1 or 2", p)
	}
}

// TestCacheSingleflightWhileSolving: while one solve for a key is in
// flight, every other miss on that key waits for it instead of solving
// again.
func TestCacheSingleflightWhileSolving(t *testing.T) {
	cache, _ := NewCache(4)
	release := make(chan struct{})
	var solves, entered atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			entered.Add(1)
			m, _, err := cache.Get(context.Background(), Key{Preference: "same"}, func(context.Context) (*Matrix, error) {
				solves.Add(1)
				<-release
				return &Matrix{Key: "same"}, nil
			})
			if err != nil || m.Key != "same" {
				t.Errorf("Get = %v, %v", m, err)
			}
		}()
	}
	deadline := time.Now().Add(5 * time.Second)
	for entered.Load() < 32 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // let them all reach the flight
	close(release)
	wg.Wait()
	if n := solves.Load(); n != 1 {
		t.Errorf("32 misses on one key while its solve was in flight solved %d times, want 1", n)
	}
}
