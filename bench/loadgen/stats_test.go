package main

import (
	"testing"
	"time"
)

func TestPercentileNearestRank(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		d := make([]time.Duration, len(v))
		for i, x := range v {
			d[i] = time.Duration(x) * time.Millisecond
		}
		return d
	}
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one value", ms(7), 50, 7 * time.Millisecond},
		{"one value p99", ms(7), 99, 7 * time.Millisecond},
		{"two values p50 is the lower", ms(1, 2), 50, time.Millisecond},
		{"two values p51", ms(1, 2), 51, 2 * time.Millisecond},
		{"odd count median", ms(1, 2, 3, 4, 5), 50, 3 * time.Millisecond},
		{"p100 is the max", ms(1, 2, 3, 4, 5), 100, 5 * time.Millisecond},
		{"tiny p is the min", ms(1, 2, 3, 4, 5), 0.1, time.Millisecond},
		{"1..100 p50", hundred, 50, 50 * time.Millisecond},
		{"1..100 p90", hundred, 90, 90 * time.Millisecond},
		{"1..100 p99", hundred, 99, 99 * time.Millisecond},
		{"1..100 p99.5", hundred, 99.5, 100 * time.Millisecond},
		// 10 values: p99 needs rank ceil(9.9) = 10, the maximum.
		{"ten values p99", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 99, 10 * time.Millisecond},
		{"ten values p90", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 90, 9 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := percentile(tt.sorted, tt.p); got != tt.want {
			t.Errorf("%s: percentile(p=%v) = %v, want %v", tt.name, tt.p, got, tt.want)
		}
	}
}

func TestSummarizeSortsAndRounds(t *testing.T) {
	lat := []time.Duration{
		3 * time.Millisecond, 1 * time.Millisecond, 1500 * time.Microsecond, 2*time.Millisecond + 1234,
	}
	s := summarize(lat)
	check := func(name string, got *float64, want float64) {
		t.Helper()
		if got == nil || *got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	check("p50", s.P50, 1.5)
	check("p90", s.P90, 3)
	check("p99", s.P99, 3)
	check("max", s.Max, 3)
	// (1 + 1.5 + 2.001234 + 3) / 4 = 1.8753085 ms, rounded to the µs.
	check("mean", s.Mean, 1.875)
	for i := 1; i < len(lat); i++ {
		if lat[i] < lat[i-1] {
			t.Fatalf("summarize left the latencies unsorted: %v", lat)
		}
	}
	if e := summarize(nil); e.P50 != nil || e.Mean != nil || e.Max != nil {
		t.Errorf("summarize(nil) = %+v, want all nil", e)
	}
}
