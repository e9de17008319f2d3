package main

import (
	"os"
	"slices"
	"testing"
)

// TestStreamPass: the sum of the buffer, for lengths with and without a
// remainder past the four accumulators, and one write in writeStride.
func TestStreamPass(t *testing.T) {
	for _, n := range []int{1, 3, 4, 7, 130, 4099} {
		buf := make([]float64, n)
		want := 0.0
		for i := range buf {
			buf[i] = float64(i + 1)
			want += float64(i + 1)
		}
		if got := streamPass(buf); got != want {
			t.Errorf("n=%d: sum %g, want %g", n, got, want)
		}
		for i, v := range buf {
			written := v != float64(i+1)
			if written != (i%writeStride == 0) {
				t.Errorf("n=%d: element %d written %v, want %v", n, i, written, i%writeStride == 0)
			}
		}
	}
}

// TestSetNice: every thread of the process at the level asked; the level
// is put back after (as root).
func TestSetNice(t *testing.T) {
	before, err := niceLevels()
	if err != nil {
		t.Fatal(err)
	}
	if len(before) != 1 || before[0] > 12 {
		t.Skipf("threads at nice %v: want one level, at most 12", before)
	}
	if err := setNice(before[0] + 7); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if os.Geteuid() == 0 { // only root lowers a nice level
			if err := setNice(before[0]); err != nil {
				t.Error(err)
			}
		}
	})
	got, err := niceLevels()
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{before[0] + 7}; !slices.Equal(got, want) {
		t.Errorf("nice levels %v, want %v", got, want)
	}
}
