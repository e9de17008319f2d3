package main

import (
	"math"
	"testing"
)

func TestParseSample(t *testing.T) {
	for _, tc := range []struct {
		line string
		name string
		v    float64
		ok   bool
	}{
		{"go_goroutines 24", "go_goroutines", 24, true},
		{`react_wp_solve_duration_seconds_count{profile="synth"} 466`, "react_wp_solve_duration_seconds_count", 466, true},
		{`react_wp_form_duration_seconds_count{profile="a b",x="1"} 7`, "react_wp_form_duration_seconds_count", 7, true},
		{"go_memstats_heap_inuse_bytes 6.1e+08", "go_memstats_heap_inuse_bytes", 6.1e8, true},
		{"# TYPE go_goroutines gauge", "", 0, false},
		{"", "", 0, false},
		{"go_goroutines", "", 0, false},
		{"go_goroutines many", "", 0, false},
	} {
		name, v, ok := parseSample(tc.line)
		if name != tc.name || v != tc.v || ok != tc.ok {
			t.Errorf("parseSample(%q) = %q, %g, %v; want %q, %g, %v", tc.line, name, v, ok, tc.name, tc.v, tc.ok)
		}
	}
}

// TestParseSampleNaN: a NaN value is a sample (Prometheus writes NaN).
func TestParseSampleNaN(t *testing.T) {
	if name, v, ok := parseSample("x NaN"); name != "x" || !math.IsNaN(v) || !ok {
		t.Errorf("parseSample(x NaN) = %q, %g, %v", name, v, ok)
	}
}
