package control

import (
	"container/list"
	"context"
	"math"
	"time"
)

// clientKeyType is the context key of a request's client key.
type clientKeyType struct{}

// WithClientKey returns ctx carrying the key of the client a request comes
// from (a user id, or the peer's address), by which the cache limits the
// solves one client may start (CacheOptions.KeyRate).
func WithClientKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, clientKeyType{}, key)
}

// ClientKey returns the client key of ctx, "" when it has none (requests
// without a key share one).
func ClientKey(ctx context.Context) string {
	k, _ := ctx.Value(clientKeyType{}).(string)
	return k
}

// maxTrackedKeys bounds the keys a keyLimiter remembers: past it, the key
// seen least recently is forgotten (and starts again with a full bucket).
const maxTrackedKeys = 8192

// rateLimit is a token bucket's refill: rate tokens a second, up to burst.
type rateLimit struct {
	rate  float64
	burst float64
}

// newRateLimit is rate a second with bursts of burst; burst 0 is one
// second of the rate (at least one token: a rate below 1/s with burst 0
// admits one solve, then one every 1/rate seconds).
func newRateLimit(rate float64, burst int) rateLimit {
	if burst <= 0 {
		burst = max(1, int(math.Ceil(rate)))
	}
	return rateLimit{rate: rate, burst: float64(burst)}
}

// bucket is the tokens of one token bucket at a time; keyLimiter's buckets
// carry their key.
type bucket struct {
	key    string
	tokens float64
	at     time.Time
}

// fill adds to b the tokens of the time since its last fill, up to the
// burst.
func (r rateLimit) fill(b *bucket, now time.Time) {
	if dt := now.Sub(b.at).Seconds(); dt > 0 {
		b.tokens = math.Min(r.burst, b.tokens+dt*r.rate)
		b.at = now
	}
}

// takeTokens takes one token of each bucket, nil ones skipped, once
// admit has checked that every bucket has one.
func takeTokens(bs ...*bucket) {
	for _, b := range bs {
		if b != nil {
			b.tokens--
		}
	}
}

// keyLimiter is a token bucket per client key: each key may start rate
// solves a second, in bursts of up to burst. It is guarded by Cache.mu.
type keyLimiter struct {
	rateLimit
	lru  *list.List // of *bucket, most recent first
	keys map[string]*list.Element
}

func newKeyLimiter(rate float64, burst int) *keyLimiter {
	return &keyLimiter{rateLimit: newRateLimit(rate, burst), lru: list.New(), keys: make(map[string]*list.Element)}
}

// bucket returns key's bucket filled to now, a full one for a key not
// seen (or forgotten).
func (l *keyLimiter) bucket(key string, now time.Time) *bucket {
	el, ok := l.keys[key]
	if !ok {
		if l.lru.Len() >= maxTrackedKeys {
			old := l.lru.Back()
			l.lru.Remove(old)
			delete(l.keys, old.Value.(*bucket).key)
		}
		el = l.lru.PushFront(&bucket{key: key, tokens: l.burst, at: now})
		l.keys[key] = el
	}
	l.lru.MoveToFront(el)
	b := el.Value.(*bucket)
	l.fill(b, now)
	return b
}

// solveLimiter is the one token bucket of the whole cache
// (CacheOptions.SolveRate): every key, every partition, starts at most
// rate solves a second between them, in bursts of up to burst. It is
// guarded by Cache.mu.
type solveLimiter struct {
	rateLimit
	b bucket
}

// newSolveLimiter returns a full bucket at now.
func newSolveLimiter(rate float64, burst int, now time.Time) *solveLimiter {
	r := newRateLimit(rate, burst)
	return &solveLimiter{rateLimit: r, b: bucket{tokens: r.burst, at: now}}
}

// bucket returns the bucket filled to now.
func (l *solveLimiter) bucket(now time.Time) *bucket {
	l.fill(&l.b, now)
	return &l.b
}

// solveBudget is the solver time new preferences may take
// (CacheOptions.SolveShare): a bucket of seconds, filled at share ×
// solvers seconds a second up to burst, from which each solve and each
// background formation of W_p pays the time it took once it ends. A solve
// is admitted while the bucket holds any time, so the one that empties it
// runs and leaves it in debt, which later fills pay off: over any long
// stretch the solvers spend at most the share of their time on new
// preferences, whatever D, the backend and the CPU make a solve cost. It is
// guarded by Cache.mu.
type solveBudget struct {
	rateLimit // seconds a second, up to burst seconds
	b         bucket
}

// newSolveBudget returns a full budget at now for a share of solvers'
// time, with bursts of burst (0: one second's worth).
func newSolveBudget(share float64, solvers int, burst time.Duration, now time.Time) *solveBudget {
	r := rateLimit{rate: share * float64(solvers), burst: burst.Seconds()}
	if burst <= 0 {
		r.burst = r.rate
	}
	return &solveBudget{rateLimit: r, b: bucket{tokens: r.burst, at: now}}
}

// bucket returns the bucket filled to now.
func (l *solveBudget) bucket(now time.Time) *bucket {
	l.fill(&l.b, now)
	return &l.b
}

// pay takes took from the budget at now, into debt if need be.
func (l *solveBudget) pay(took time.Duration, now time.Time) {
	l.bucket(now).tokens -= took.Seconds()
}

// shedMargin is how long before a request's deadline holdShed lets its
// refusal go, so that the client reads RESOURCE_EXHAUSTED (or 429), not
// its own deadline.
const shedMargin = 10 * time.Millisecond

// holdShed waits before a refused request is answered: shedHold(ctx, d),
// or until ctx ends. A client that asks again at once, ignoring
// Retry-After, then sends at most one request per d for each it has in
// flight instead of one per round trip: refusals cost the sidecar about
// 75 µs of CPU each, and such a flood was refused 12,600 times a second in
// bench/abuse.sh's deadlines-template window (2.08× the well-behaved
// client's p99). A client that honours Retry-After (longer than d) loses
// nothing.
func holdShed(ctx context.Context, d time.Duration) {
	d = shedHold(ctx, d, time.Now())
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

// shedHold is how long holdShed holds a refusal at now: d, but no later
// than shedMargin before ctx's deadline; 0 or less for not at all.
func shedHold(ctx context.Context, d time.Duration, now time.Time) time.Duration {
	if deadline, ok := ctx.Deadline(); ok {
		d = min(d, deadline.Sub(now)-shedMargin)
	}
	return d
}
