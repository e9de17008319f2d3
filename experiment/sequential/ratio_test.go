package sequential

import (
	"math"
	"testing"
)

// TestSampleRatio against the χ² distribution's closed forms: the upper
// tail is erfc(√(x/2)) with one degree of freedom and exp(−x/2) with two.
func TestSampleRatio(t *testing.T) {
	for _, tc := range []struct {
		name           string
		counts, weight []float64
		chi2, p        float64
		mismatch       bool
	}{
		{"even", []float64{500, 500}, []float64{1, 1}, 0, 1, false},
		{"one df", []float64{600, 400}, []float64{1, 1}, 40, math.Erfc(math.Sqrt(20)), true},
		{"one df, weighted", []float64{310, 690}, []float64{3, 7}, 100.0/300 + 100.0/700, math.Erfc(math.Sqrt((100.0/300 + 100.0/700) / 2)), false},
		{"two df", []float64{100, 100, 130}, []float64{1, 1, 1}, 2*100.0/110 + 400.0/110, math.Exp(-(2*100.0/110 + 400.0/110) / 2), false},
		{"a zero weight counted", []float64{500, 500, 1}, []float64{1, 1, 0}, 0.5 / 500.5, math.Erfc(math.Sqrt(0.25 / 500.5)), true},
		{"a zero weight empty", []float64{500, 500, 0}, []float64{1, 1, 0}, 0, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := SampleRatio(tc.counts, tc.weight, 0)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(r.ChiSquare-tc.chi2) > 1e-9*(1+tc.chi2) || math.Abs(r.PValue-tc.p) > 1e-9*tc.p+1e-15 {
				t.Errorf("χ² %v, p %v; want %v, %v", r.ChiSquare, r.PValue, tc.chi2, tc.p)
			}
			if r.Mismatch != tc.mismatch {
				t.Errorf("mismatch %v, want %v", r.Mismatch, tc.mismatch)
			}
		})
	}
	for _, bad := range [][2][]float64{
		{{1, 2}, {1}},
		{{1, -2}, {1, 1}},
		{{1, 2}, {0, 0}},
	} {
		if _, err := SampleRatio(bad[0], bad[1], 0); err == nil {
			t.Errorf("%v, %v accepted", bad[0], bad[1])
		}
	}
}
