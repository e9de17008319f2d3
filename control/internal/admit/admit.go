// Package admit holds the token buckets behind the W_p cache's admission
// of new solves (control.CacheOptions): a bucket per client key (Keyed),
// one for the whole cache (Shared), a budget of the solvers' time that
// each solve pays after it ran (Budget), and the hold of a refused
// request (Hold). None of them locks: the cache guards them with its
// mutex, and gives them the time, so that tests can set the clock.
package admit

import (
	"container/list"
	"context"
	"math"
	"time"
)

// MaxTrackedKeys bounds the keys a Keyed remembers: past it, the key seen
// least recently is forgotten (and starts again with a full bucket).
const MaxTrackedKeys = 8192

// Rate is a token bucket's refill: PerSecond tokens a second, up to
// Burst.
type Rate struct {
	PerSecond float64
	Burst     float64
}

// NewRate is rate a second with bursts of burst; burst 0 is one second of
// the rate (at least one token: a rate below 1/s with burst 0 admits one
// solve, then one every 1/rate seconds).
func NewRate(rate float64, burst int) Rate {
	if burst <= 0 {
		burst = max(1, int(math.Ceil(rate)))
	}
	return Rate{PerSecond: rate, Burst: float64(burst)}
}

// Bucket is the tokens of one token bucket at a time; a Keyed's buckets
// carry their key.
type Bucket struct {
	key    string
	Tokens float64
	at     time.Time
}

// fill adds to b the tokens of the time since its last fill, up to the
// burst.
func (r Rate) fill(b *Bucket, now time.Time) {
	if dt := now.Sub(b.at).Seconds(); dt > 0 {
		b.Tokens = math.Min(r.Burst, b.Tokens+dt*r.PerSecond)
		b.at = now
	}
}

// Take takes one token of each bucket, nil ones skipped, once the caller
// has checked that every bucket has one.
func Take(bs ...*Bucket) {
	for _, b := range bs {
		if b != nil {
			b.Tokens--
		}
	}
}

// Keyed is a token bucket per client key: each key may start rate solves
// a second, in bursts of up to burst.
type Keyed struct {
	Rate
	lru  *list.List // of *Bucket, most recent first
	keys map[string]*list.Element
}

// NewKeyed returns a Keyed of rate a second per key, in bursts of burst.
func NewKeyed(rate float64, burst int) *Keyed {
	return &Keyed{Rate: NewRate(rate, burst), lru: list.New(), keys: make(map[string]*list.Element)}
}

// Bucket returns key's bucket filled to now, a full one for a key not
// seen (or forgotten).
func (l *Keyed) Bucket(key string, now time.Time) *Bucket {
	el, ok := l.keys[key]
	if !ok {
		if l.lru.Len() >= MaxTrackedKeys {
			old := l.lru.Back()
			l.lru.Remove(old)
			delete(l.keys, old.Value.(*Bucket).key)
		}
		el = l.lru.PushFront(&Bucket{key: key, Tokens: l.Burst, at: now})
		l.keys[key] = el
	}
	l.lru.MoveToFront(el)
	b := el.Value.(*Bucket)
	l.fill(b, now)
	return b
}

// Shared is the one token bucket of a whole cache: every key, every
// partition, starts at most rate solves a second between them, in bursts
// of up to burst.
type Shared struct {
	Rate
	b Bucket
}

// NewShared returns a full bucket at now.
func NewShared(rate float64, burst int, now time.Time) *Shared {
	r := NewRate(rate, burst)
	return &Shared{Rate: r, b: Bucket{Tokens: r.Burst, at: now}}
}

// Bucket returns the bucket filled to now.
func (l *Shared) Bucket(now time.Time) *Bucket {
	l.fill(&l.b, now)
	return &l.b
}

// Budget is the solver time new preferences may take: a bucket of
// seconds, filled at share × solvers seconds a second up to burst, from
// which each solve and each background formation of W_p pays the time it
// took once it ends. A solve is admitted while the bucket holds any time
// (Tokens > 0), so the one that empties it runs and leaves it in debt,
// which later fills pay off: over any long stretch the solvers spend at
// most the share of their time on new preferences, whatever D, the
// backend and the CPU make a solve cost. Since a solve pays only when it
// ends, every solve admitted before then runs too: the overdraft is up to
// the solves a cache lets run and wait at once (its solvers and queue).
type Budget struct {
	Rate // seconds a second, up to Burst seconds
	b    Bucket
}

// NewBudget returns a full budget at now for a share of solvers' time,
// with bursts of burst (0: one second's worth).
func NewBudget(share float64, solvers int, burst time.Duration, now time.Time) *Budget {
	r := Rate{PerSecond: share * float64(solvers), Burst: burst.Seconds()}
	if burst <= 0 {
		r.Burst = r.PerSecond
	}
	return &Budget{Rate: r, b: Bucket{Tokens: r.Burst, at: now}}
}

// Bucket returns the bucket filled to now: its Tokens are the seconds
// left, negative while in debt.
func (l *Budget) Bucket(now time.Time) *Bucket {
	l.fill(&l.b, now)
	return &l.b
}

// Pay takes took from the budget at now, into debt if need be. A took
// below zero (a clock without monotonic readings stepped back while the
// solve ran) pays nothing: it must not lift the budget past its burst.
func (l *Budget) Pay(took time.Duration, now time.Time) {
	l.Bucket(now).Tokens -= max(took, 0).Seconds()
}

// ShedMargin is how long before a request's deadline Hold lets its
// refusal go, so that the client reads RESOURCE_EXHAUSTED (or 429), not
// its own deadline.
const ShedMargin = 10 * time.Millisecond

// Hold waits before a refused request is answered: HoldFor(ctx, d), or
// until ctx ends. A client that asks again at once, ignoring Retry-After,
// then sends at most one request per d for each it has in flight instead
// of one per round trip: refusals cost the sidecar about 75 µs of CPU
// each, and such a flood was refused 12,600 times a second in
// bench/abuse.sh's deadlines-template window (2.08× the well-behaved
// client's p99). A client that honours Retry-After (longer than d) loses
// nothing.
func Hold(ctx context.Context, d time.Duration) {
	d = HoldFor(ctx, d, time.Now())
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// HoldFor is how long Hold holds a refusal at now: d, but no later than
// ShedMargin before ctx's deadline; 0 or less for not at all.
func HoldFor(ctx context.Context, d time.Duration, now time.Time) time.Duration {
	if deadline, ok := ctx.Deadline(); ok {
		d = min(d, deadline.Sub(now)-ShedMargin)
	}
	return d
}
