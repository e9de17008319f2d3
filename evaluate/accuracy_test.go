package evaluate

import (
	"math"
	"strings"
	"testing"
)

func TestAccuracy(t *testing.T) {
	for _, tc := range []struct {
		name    string
		logits  []float32
		classes int
		labels  []int64
		want    float64
	}{
		{"all right", []float32{1, 0, 0, 2}, 2, []int64{0, 1}, 1},
		{"two of three", []float32{0, 1, 5, 1, 2, 3}, 2, []int64{1, 1, 1}, 2.0 / 3},
		// A tie goes to the lowest class, as numpy's argmax.
		{"tie", []float32{2, 2, 0, 0}, 2, []int64{0, 1}, 0.5},
		{"one class", []float32{-1, 3}, 1, []int64{0, 0}, 1},
		{"-Inf loses", []float32{float32(math.Inf(-1)), -1e30}, 2, []int64{1}, 1},
	} {
		got, err := Accuracy(tc.logits, tc.classes, tc.labels)
		if err != nil || math.Abs(got-tc.want) > 1e-15 {
			t.Errorf("%s: Accuracy = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}

func TestAccuracyErrors(t *testing.T) {
	for _, tc := range []struct {
		logits  []float32
		classes int
		labels  []int64
		want    string
	}{
		{[]float32{1, 2, 3}, 2, []int64{0, 1}, "3 logits for 2 labels of 2 classes"},
		{nil, 2, nil, "no samples"},
		{[]float32{1, 2}, 0, []int64{0}, "0 classes"},
		{[]float32{1, 2}, 2, []int64{2}, "label 2 outside [0, 2)"},
		{[]float32{float32(math.NaN()), 2}, 2, []int64{1}, "logit 0 is NaN"},
	} {
		_, err := Accuracy(tc.logits, tc.classes, tc.labels)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Accuracy(%v, %d, %v) = %v, want an error with %q", tc.logits, tc.classes, tc.labels, err, tc.want)
		}
	}
}
