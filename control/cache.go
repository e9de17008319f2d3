package control

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"

	"github.com/mergectl/react-triton/react"
)

// Key identifies a W_p: the canonical (rounded) preference, β, the
// normalisation and the components file's content. Two profiles over the
// same file with the same β and normalisation share their entries, and a
// reload that keeps them keeps the cache warm.
type Key struct {
	// Components is the SHA-256 of the components file.
	Components    string
	Beta          float64
	Normalization react.Normalization
	// Preference is the canonical form of the rounded preference.
	Preference string
}

// String formats the key for singleflight and logs.
func (k Key) String() string {
	return k.Components + "|" + strconv.FormatFloat(k.Beta, 'g', -1, 64) + "|" + string(k.Normalization) + "|" + k.Preference
}

// Lookup results, as reported to an Observer.
const (
	LookupPinned = "pinned" // the default or a preset, solved at load time
	LookupHit    = "hit"    // found in the LRU
	LookupMiss   = "miss"   // solved for this request (or joined a solve in flight)
)

// Observer is told about the cache's work, for metrics. Its methods must be
// safe for concurrent use and fast.
type Observer interface {
	// Lookup reports the result of finding a request's W_p (LookupPinned,
	// LookupHit or LookupMiss) for the named profile.
	Lookup(profile, result string)
	// Solved reports how long a request's new preference took to become
	// usable: the weighted sums and the Cholesky factorisation of C_p (or
	// the whole W_p, for the default and the presets).
	Solved(profile string, took time.Duration, err error)
	// Formed reports how long forming W_p from the factorisation took, in
	// the background, for a new preference.
	Formed(profile string, took time.Duration, err error)
}

// Cache keeps the W_p matrices of per-request preferences: an LRU of a
// fixed number of entries, with singleflight, so that concurrent requests
// that miss on the same key solve it once. It is safe for concurrent use.
type Cache struct {
	lru   *lru.Cache[Key, *Matrix]
	group singleflight.Group
	// forming admits one background formation of W_p at a time.
	forming chan struct{}
	// solving admits at most GOMAXPROCS solves at a time: a client sending
	// many new preferences at once queues behind them rather than taking
	// every core from the requests already served.
	solving chan struct{}
}

// NewCache returns a cache of size entries (at least 1).
func NewCache(size int) (*Cache, error) {
	l, err := lru.New[Key, *Matrix](size)
	if err != nil {
		return nil, fmt.Errorf("W_p cache: size %d: %w", size, err)
	}
	return &Cache{lru: l, forming: make(chan struct{}, 1), solving: make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))}, nil
}

// Len returns the number of matrices held.
func (c *Cache) Len() int { return c.lru.Len() }

// Resize changes the number of entries kept, evicting the least recently
// used ones if it shrinks.
func (c *Cache) Resize(size int) {
	if size >= 1 {
		c.lru.Resize(size)
	}
}

// Get returns the matrix for key, calling solve on a miss. Concurrent
// misses on one key share one call of solve, and at most GOMAXPROCS solves
// run at once, whatever the keys. If ctx ends first, Get returns
// ctx's error, but the solve goes on and its result is cached for the
// requests that follow. hit reports whether the matrix was already held.
func (c *Cache) Get(ctx context.Context, key Key, solve func() (*Matrix, error)) (m *Matrix, hit bool, err error) {
	if m, ok := c.lru.Get(key); ok {
		return m, true, nil
	}
	ch := c.group.DoChan(key.String(), func() (any, error) {
		// Another flight may have just finished for this key.
		if m, ok := c.lru.Get(key); ok {
			return m, nil
		}
		c.solving <- struct{}{}
		m, err := solve()
		<-c.solving
		if err != nil {
			return nil, err
		}
		c.lru.Add(key, m)
		return m, nil
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, false, r.Err
		}
		return r.Val.(*Matrix), false, nil
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
}

// nopObserver observes nothing.
type nopObserver struct{}

func (nopObserver) Lookup(string, string)               {}
func (nopObserver) Solved(string, time.Duration, error) {}
func (nopObserver) Formed(string, time.Duration, error) {}
