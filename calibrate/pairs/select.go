package pairs

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
)

// Subset says which share of a task's samples a fit draws: a seeded random
// subset of ⌈Fraction·n⌉ samples, or of at most Limit; the zero value
// keeps them all.
type Subset struct {
	// Fraction keeps this share of the samples, rounded up, in (0, 1]; 0
	// keeps them all.
	Fraction float64
	// Limit keeps at most this many samples; 0 keeps them all. It is
	// ignored when Fraction is set.
	Limit int
	// Seed chooses the subset: the same seed and number of samples give
	// the same subset.
	Seed int
}

// Shard is part Index of Count contiguous parts of the samples a fit uses,
// 0 ≤ Index < Count; a Count of 0 or 1 is every sample.
type Shard struct {
	Index, Count int
}

// Select returns the ascending indices of the samples, among a
// task's n, that a fit uses, or nil for all of them: first a random subset
// of ⌈fraction·n⌉ or min(limit, n) samples drawn with the seed (the same
// seed and n give the same subset), then, with a shard of n > 1 parts, the
// shard's contiguous part of what is left: positions [i·m/n, (i+1)·m/n) of
// the m samples.
func Select(n int, s Subset, shard Shard) []int {
	var idx []int
	k := n
	switch {
	case s.Fraction > 0:
		k = min(n, int(math.Ceil(s.Fraction*float64(n))))
	case s.Limit > 0:
		k = min(n, s.Limit)
	}
	if k < n {
		rng := rand.New(rand.NewPCG(uint64(s.Seed), 0x5eed))
		idx = rng.Perm(n)[:k]
		slices.Sort(idx)
	}
	if shard.Count > 1 {
		if idx == nil {
			idx = make([]int, n)
			for i := range idx {
				idx[i] = i
			}
		}
		m := len(idx)
		idx = idx[shard.Index*m/shard.Count : (shard.Index+1)*m/shard.Count]
	}
	return idx
}

// SubsetProvenance describes the subset of a task's samples a fit drew, for
// the components file's metadata (react.TaskStats.Provenance); nil when it
// used them all.
func SubsetProvenance(s Subset, available, used int) map[string]string {
	if s.Fraction == 0 && s.Limit == 0 {
		return nil
	}
	p := map[string]string{
		"subset.seed":      strconv.Itoa(s.Seed),
		"subset.available": strconv.Itoa(available),
		"subset.used":      strconv.Itoa(used),
	}
	if s.Fraction > 0 {
		p["subset.fraction"] = strconv.FormatFloat(s.Fraction, 'g', -1, 64)
	} else {
		p["subset.limit"] = strconv.Itoa(s.Limit)
	}
	return p
}

// Holdout returns the ascending indices, among a fit's samples idx (nil:
// 0 … n−1), of a seeded random ⌈share·m⌉ of them (at least one, and at
// least one left to fit), to hold out; nil when fewer than two.
func Holdout(n int, idx []int, share float64, seed uint64) []int {
	if idx == nil {
		idx = make([]int, n)
		for i := range idx {
			idx[i] = i
		}
	}
	m := len(idx)
	k := min(max(1, int(math.Ceil(share*float64(m)))), m-1)
	if k <= 0 {
		return nil
	}
	rng := rand.New(rand.NewPCG(seed, 0x401d))
	out := make([]int, k)
	for i, p := range rng.Perm(m)[:k] {
		out[i] = idx[p]
	}
	slices.Sort(out)
	return out
}
