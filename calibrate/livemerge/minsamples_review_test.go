package livemerge

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestMinSamplesBoundary: --min-samples is a floor that a task reaching
// it exactly passes (N ≥ MinSamples is live), one sample short is left
// out.
func TestMinSamplesBoundary(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	z, y := map[string][]float64{}, map[string][]float64{}
	z["a"], y["a"] = data(rng, 40)
	z["b"], y["b"] = data(rng, 40)
	w0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	f := liveFile(t, "sidecar-0", w0, map[string][]int{"a": span(0, 40), "b": span(0, 39)}, z, y)
	for _, tc := range []struct {
		min  int64
		want map[string]Source
	}{
		{38, map[string]Source{"a": Live, "b": Live}},
		{39, map[string]Source{"a": Live, "b": Live}},
		{40, map[string]Source{"a": Live, "b": LeftOut}},
	} {
		res, err := Merge([]File{f}, Options{MinSamples: tc.min})
		if err != nil {
			t.Fatalf("--min-samples %d: %v", tc.min, err)
		}
		for _, task := range res.Tasks {
			if want := tc.want[task.Name]; task.Source != want {
				t.Errorf("--min-samples %d: task %s (%d samples) %v, want %v", tc.min, task.Name, task.Live, task.Source, want)
			}
		}
	}
}
