package main

import (
	"math"
	"slices"
	"time"
)

// percentile returns the p-th percentile (0 < p ≤ 100) of sorted, an
// ascending slice, by the nearest-rank method: the smallest value with at
// least p per cent of the values at or below it. It returns 0 for an empty
// slice.
func percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(n)))
	rank = min(max(rank, 1), n)
	return sorted[rank-1]
}

// latencySummary is what the output says about the measured latencies, in
// milliseconds; nil when nothing was measured.
type latencySummary struct {
	P50, P90, P99, Mean, Max *float64
}

// summarize sorts lat in place and summarises it.
func summarize(lat []time.Duration) latencySummary {
	if len(lat) == 0 {
		return latencySummary{}
	}
	slices.Sort(lat)
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	ms := func(d time.Duration) *float64 {
		v := roundTo(float64(d)/float64(time.Millisecond), 3)
		return &v
	}
	return latencySummary{
		P50:  ms(percentile(lat, 50)),
		P90:  ms(percentile(lat, 90)),
		P99:  ms(percentile(lat, 99)),
		Mean: ms(sum / time.Duration(len(lat))),
		Max:  ms(lat[len(lat)-1]),
	}
}

// roundTo rounds x to the given number of decimals.
func roundTo(x float64, decimals int) float64 {
	scale := math.Pow10(decimals)
	return math.Round(x*scale) / scale
}
