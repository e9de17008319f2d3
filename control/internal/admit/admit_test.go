package admit

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// allow takes a token of key's bucket at now, and reports whether there
// was one: a Keyed alone, as the cache's admission uses it.
func allow(l *Keyed, key string, now time.Time) bool {
	b := l.Bucket(key, now)
	if b.Tokens < 1 {
		return false
	}
	Take(b)
	return true
}

// TestKeyedRefills: a bucket refills at the rate, up to the burst,
// and forgets the least recently seen key beyond MaxTrackedKeys.
func TestKeyedRefills(t *testing.T) {
	l := NewKeyed(2, 3)
	t0 := time.Unix(1000, 0)
	for i := range 3 {
		if !allow(l, "k", t0) {
			t.Fatalf("token %d of the burst refused", i)
		}
	}
	if allow(l, "k", t0) {
		t.Fatal("a fourth token at once")
	}
	if !allow(l, "k", t0.Add(500*time.Millisecond)) || allow(l, "k", t0.Add(500*time.Millisecond)) {
		t.Error("half a second at 2/s should give exactly one token")
	}
	long := t0.Add(time.Hour)
	for i := range 3 {
		if !allow(l, "k", long) {
			t.Fatalf("after an hour, token %d refused", i)
		}
	}
	if allow(l, "k", long) {
		t.Error("the bucket grew past its burst")
	}
	for i := range MaxTrackedKeys {
		allow(l, fmt.Sprint("other", i), long)
	}
	if len(l.keys) != MaxTrackedKeys || l.lru.Len() != MaxTrackedKeys {
		t.Errorf("%d keys tracked, want %d", len(l.keys), MaxTrackedKeys)
	}
	if _, ok := l.keys["k"]; ok {
		t.Error("the least recently seen key was not forgotten")
	}
}

// TestHoldFor: the hold is the delay, but ends ShedMargin before the
// request's deadline, and is nothing when that is already past.
func TestHoldFor(t *testing.T) {
	now := time.Unix(1000, 0)
	for _, tc := range []struct {
		name     string
		deadline time.Duration // from now; 0: none
		want     time.Duration
	}{
		{"no deadline", 0, 100 * time.Millisecond},
		{"a far deadline", time.Second, 100 * time.Millisecond},
		{"a near deadline", 50 * time.Millisecond, 50*time.Millisecond - ShedMargin},
		{"within the margin", ShedMargin / 2, -ShedMargin / 2},
	} {
		ctx := context.Background()
		if tc.deadline > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, now.Add(tc.deadline))
			defer cancel()
		}
		if got := HoldFor(ctx, 100*time.Millisecond, now); got != tc.want {
			t.Errorf("%s: hold %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A budget of a tenth of one solver's time: 0.1 s a second, and one
// second's worth, 0.1 s, at once. A solve of 0.3 s starts (time is left)
// and overdraws it; new solves wait until the fills have paid the debt.
func ExampleBudget() {
	t0 := time.Unix(0, 0)
	b := NewBudget(0.1, 1, 0, t0)
	fmt.Printf("left %.2f s\n", b.Bucket(t0).Tokens)
	b.Pay(300*time.Millisecond, t0.Add(300*time.Millisecond))
	fmt.Printf("after the solve %.2f s\n", b.Bucket(t0.Add(300*time.Millisecond)).Tokens)
	fmt.Printf("2.5 s later %.2f s\n", b.Bucket(t0.Add(2800*time.Millisecond)).Tokens)
	// Output:
	// left 0.10 s
	// after the solve -0.20 s
	// 2.5 s later 0.05 s
}

// TestKeyedForgetsLeastRecentlySeen: past MaxTrackedKeys the key forgotten
// is the one seen least recently, not the one added first: a key asked
// for again is kept, with what it spent.
func TestKeyedForgetsLeastRecentlySeen(t *testing.T) {
	l := NewKeyed(0.001, 2)
	t0 := time.Unix(1000, 0)
	allow(l, "k", t0) // one token of two left
	for i := range MaxTrackedKeys - 1 {
		allow(l, fmt.Sprint("other", i), t0)
	}
	allow(l, "k", t0) // seen again: now the most recent, with none left
	allow(l, "new", t0)
	if _, ok := l.keys["other0"]; ok {
		t.Error("other0, the least recently seen, was kept")
	}
	if _, ok := l.keys["k"]; !ok {
		t.Fatal("k, seen again since other0, was forgotten")
	}
	if allow(l, "k", t0) {
		t.Error("k got a token back: forgotten and started afresh")
	}
}

// TestBucketsClockBackwards: a reading of the clock earlier than the last
// one neither fills a bucket nor takes from it, and the next later reading
// fills it from the latest time seen, not from the earlier one (a clock
// stepped back must not fill twice the same time).
func TestBucketsClockBackwards(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, tc := range []struct {
		name   string
		bucket func(now time.Time) *Bucket
		rate   float64
	}{
		{"Keyed", func() func(time.Time) *Bucket {
			l := NewKeyed(2, 10)
			return func(now time.Time) *Bucket { return l.Bucket("k", now) }
		}(), 2},
		{"Shared", NewShared(2, 10, t0).Bucket, 2},
		{"Budget", NewBudget(0.5, 4, 10*time.Second, t0).Bucket, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.bucket(t0)
			b.Tokens = 1 // spent down to one
			for _, back := range []time.Duration{time.Millisecond, time.Second, time.Hour} {
				if got := tc.bucket(t0.Add(-back)).Tokens; got != 1 {
					t.Errorf("%v before the last reading: %v tokens, want 1", back, got)
				}
			}
			// 1 + 2 a second × 1.5 s, filled from t0.
			if got, want := tc.bucket(t0.Add(1500*time.Millisecond)).Tokens, 1+tc.rate*1.5; got != want {
				t.Errorf("1.5 s after the last reading: %v tokens, want %v", got, want)
			}
		})
	}
}

// TestBudgetPayNegative: a duration below zero, a clock stepped back while
// a solve ran, pays nothing: it neither lifts the budget past its burst
// nor pays off a debt.
func TestBudgetPayNegative(t *testing.T) {
	t0 := time.Unix(1000, 0)
	b := NewBudget(0.5, 1, time.Second, t0)
	b.Pay(-time.Hour, t0)
	if got := b.Bucket(t0).Tokens; got != 1 {
		t.Errorf("full, paid -1h: %v s left, want 1 (the burst)", got)
	}
	b.Pay(3*time.Second, t0)
	b.Pay(-time.Second, t0)
	if got := b.Bucket(t0).Tokens; got != -2 {
		t.Errorf("in debt, paid -1s: %v s left, want -2", got)
	}
}

// TestNewBudgetBurst: the budget's rate is share × solvers seconds a
// second, and a burst of 0 is one second of that rate, solvers included;
// the budget starts full.
func TestNewBudgetBurst(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, tc := range []struct {
		share     float64
		solvers   int
		burst     time.Duration
		rate, max float64
	}{
		{0.1, 1, 0, 0.1, 0.1},
		{0.1, 4, 0, 0.4, 0.4},
		{0.25, 8, 0, 2, 2},
		{0.1, 4, 3 * time.Second, 0.4, 3},
		{1, 2, time.Millisecond, 2, 0.001},
	} {
		b := NewBudget(tc.share, tc.solvers, tc.burst, t0)
		if b.PerSecond != tc.rate || b.Burst != tc.max || b.Bucket(t0).Tokens != tc.max {
			t.Errorf("NewBudget(%v, %d, %v): %v s a second up to %v s, %v s at the start; want %v up to %v, full",
				tc.share, tc.solvers, tc.burst, b.PerSecond, b.Burst, b.Bucket(t0).Tokens, tc.rate, tc.max)
		}
	}
}
