package pairs

import (
	"slices"
	"testing"
)

// TestSelectSamples checks the subsets and shards: sorted, distinct, of the
// size asked, the same for the same seed, and shards that partition them.
func TestSelectSamples(t *testing.T) {
	if idx := Select(10, Subset{}, Shard{}); idx != nil {
		t.Errorf("no subset, no shard: %v, want nil (every sample)", idx)
	}
	for _, s := range []Subset{{Fraction: 0.3, Seed: 1}, {Limit: 7, Seed: 2}, {Limit: 100}, {Fraction: 1}} {
		idx := Select(20, s, Shard{})
		want := 20
		switch {
		case s.Fraction == 0.3:
			want = 6
		case s.Limit == 7:
			want = 7
		}
		if want == 20 && idx != nil || want < 20 && len(idx) != want {
			t.Errorf("%+v: %d samples, want %d", s, len(idx), want)
		}
		if !slices.IsSorted(idx) || len(slices.Compact(slices.Clone(idx))) != len(idx) {
			t.Errorf("%+v: %v is not sorted and distinct", s, idx)
		}
		if again := Select(20, s, Shard{}); !slices.Equal(again, idx) {
			t.Errorf("%+v: not deterministic", s)
		}
		var union []int
		for i := range 3 {
			union = append(union, Select(20, s, Shard{Index: i, Count: 3})...)
		}
		all := idx
		if all == nil {
			all = Select(20, s, Shard{Index: 0, Count: 1})
			for i := range 20 {
				all = append(all, i)
			}
		}
		if !slices.Equal(union, all) {
			t.Errorf("%+v: shards %v do not partition %v", s, union, all)
		}
	}
	a := Select(100, Subset{Limit: 10, Seed: 1}, Shard{})
	b := Select(100, Subset{Limit: 10, Seed: 2}, Shard{})
	if slices.Equal(a, b) {
		t.Error("seeds 1 and 2 draw the same subset")
	}
}

func TestHoldoutSamples(t *testing.T) {
	for _, c := range []struct {
		name  string
		n     int
		idx   []int
		share float64
		want  int
	}{
		{"all samples", 40, nil, 0.2, 8},
		{"rounded up", 41, nil, 0.2, 9},
		{"of a subset", 100, []int{3, 10, 11, 50, 70, 99}, 0.5, 3},
		{"at least one", 5, nil, 0.01, 1},
		{"one left to fit", 2, nil, 0.9, 1},
		{"one sample: none", 1, nil, 0.5, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := Holdout(c.n, c.idx, c.share, 7)
			if len(h) != c.want {
				t.Fatalf("%d held out, want %d", len(h), c.want)
			}
			if !slices.IsSorted(h) {
				t.Errorf("not sorted: %v", h)
			}
			for _, i := range h {
				if i < 0 || i >= c.n || (c.idx != nil && !slices.Contains(c.idx, i)) {
					t.Errorf("%d is not one of the fit's samples", i)
				}
			}
			if again := Holdout(c.n, c.idx, c.share, 7); !slices.Equal(h, again) {
				t.Errorf("not deterministic: %v then %v", h, again)
			}
		})
	}
	if a, b := Holdout(100, nil, 0.2, 1), Holdout(100, nil, 0.2, 2); slices.Equal(a, b) {
		t.Error("seeds 1 and 2 hold out the same samples")
	}
}
