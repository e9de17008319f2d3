package config

import (
	"math"
	"testing"
	"time"

	"github.com/mergectl/react-triton/problem"
)

// TestShadowBounds checks validateShadow at and just past each bound; the
// golden file testdata/bad/experiment_shadow.err holds the messages.
func TestShadowBounds(t *testing.T) {
	for _, tt := range []struct {
		name  string
		s     Shadow
		arms  int
		paths []string
	}{
		{"off", Shadow{}, 1, nil},
		{"off with one arm", Shadow{MaxConcurrent: 3, Timeout: time.Second}, 1, nil},
		{"every bound", Shadow{Fraction: 1, MaxConcurrent: MaxShadowConcurrent, Timeout: MaxShadowTimeout}, 2, nil},
		{"smallest", Shadow{Fraction: math.SmallestNonzeroFloat64, MaxConcurrent: 1, Timeout: time.Nanosecond}, 2, nil},
		{"past every bound", Shadow{Fraction: math.Nextafter(1, 2), MaxConcurrent: MaxShadowConcurrent + 1, Timeout: MaxShadowTimeout + 1}, 2,
			[]string{"s.fraction", "s.max_concurrent", "s.timeout"}},
		{"infinite", Shadow{Fraction: math.Inf(1)}, 2, []string{"s.fraction"}},
		{"one arm", Shadow{Fraction: 0.5}, 1, []string{"s.fraction"}},
	} {
		var p problem.List
		validateShadow(&p, "s", tt.s, tt.arms)
		var got []string
		for _, pr := range p {
			got = append(got, pr.Path)
		}
		if len(got) != len(tt.paths) {
			t.Errorf("%s: problems %v, want at %v", tt.name, p, tt.paths)
			continue
		}
		for i := range got {
			if got[i] != tt.paths[i] {
				t.Errorf("%s: problems %v, want at %v", tt.name, p, tt.paths)
			}
		}
	}
}

// TestShadowEffective: the keys left at 0 take their defaults, the others
// stay.
func TestShadowEffective(t *testing.T) {
	got := Shadow{Fraction: 0.3}.Effective()
	if want := (Shadow{Fraction: 0.3, MaxConcurrent: 2, Timeout: 2 * time.Second}); got != want {
		t.Errorf("defaults: %+v, want %+v", got, want)
	}
	set := Shadow{Fraction: 1, MaxConcurrent: 7, Timeout: time.Millisecond}
	if got := set.Effective(); got != set {
		t.Errorf("set: %+v, want %+v", got, set)
	}
	if (Shadow{}).Enabled() || !(Shadow{Fraction: 1e-9}).Enabled() {
		t.Error("Enabled: want true exactly for a positive fraction")
	}
}
