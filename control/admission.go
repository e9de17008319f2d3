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

// keyLimiter is a token bucket per client key: each key may start rate
// solves a second, in bursts of up to burst. It is guarded by Cache.mu.
type keyLimiter struct {
	rate  float64
	burst float64
	lru   *list.List // of *bucket, most recent first
	keys  map[string]*list.Element
}

// bucket is one key's tokens at a time.
type bucket struct {
	key    string
	tokens float64
	at     time.Time
}

func newKeyLimiter(rate float64, burst int) *keyLimiter {
	return &keyLimiter{rate: rate, burst: float64(burst), lru: list.New(), keys: make(map[string]*list.Element)}
}

// allow takes a token of key's bucket at now, and reports whether there
// was one.
func (l *keyLimiter) allow(key string, now time.Time) bool {
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
	if dt := now.Sub(b.at).Seconds(); dt > 0 {
		b.tokens = math.Min(l.burst, b.tokens+dt*l.rate)
		b.at = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
