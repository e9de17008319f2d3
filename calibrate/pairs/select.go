package pairs

import (
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/mergectl/react-triton/config"
)

// Select returns the ascending indices of the samples, among a
// task's n, that a fit uses, or nil for all of them: first a random subset
// of ⌈fraction·n⌉ or min(limit, n) samples drawn with the seed (the same
// seed and n give the same subset), then, with a shard of n > 1 parts, the
// shard's contiguous part of what is left: positions [i·m/n, (i+1)·m/n) of
// the m samples.
func Select(n int, s config.Sample, shard config.Shard) []int {
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
func SubsetProvenance(s config.Sample, available, used int) map[string]string {
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

// Selected is a Source that passes on the pairs of src at the
// positions idx (ascending; nil: every pair), from position skip on. Its
// batches hold as many of those pairs as the destination does, so that the
// batches, and so the order of the sums, depend only on the positions.
type Selected struct {
	Source
	idx      []int
	skip     int
	row      int // pairs of src read so far
	pos      int // next position among those used
	mtl, ind []float64
}

// NewSelected wraps src; see Selected.
func NewSelected(src Source, idx []int, skip int) *Selected {
	return &Selected{Source: src, idx: idx, skip: skip}
}

// Len implements Source.
func (s *Selected) Len() int64 {
	if s.idx != nil {
		return int64(len(s.idx))
	}
	return s.Source.Len()
}

// Next implements Source.
func (s *Selected) Next(mtl, ind []float64) (int, error) {
	d := s.Dim()
	want := len(mtl) / d
	if len(s.mtl) < len(mtl) {
		s.mtl, s.ind = make([]float64, len(mtl)), make([]float64, len(mtl))
	}
	filled := 0
	for filled < want {
		n, err := s.Source.Next(s.mtl[:(want-filled)*d], s.ind[:(want-filled)*d])
		for i := range n {
			row := s.row + i
			if s.idx != nil {
				for s.pos < len(s.idx) && s.idx[s.pos] < row {
					s.pos++
				}
				if s.pos >= len(s.idx) || s.idx[s.pos] != row {
					continue
				}
			} else {
				s.pos = row
			}
			if s.pos >= s.skip {
				copy(mtl[filled*d:(filled+1)*d], s.mtl[i*d:(i+1)*d])
				copy(ind[filled*d:(filled+1)*d], s.ind[i*d:(i+1)*d])
				filled++
			}
			if s.idx != nil {
				s.pos++
			}
		}
		s.row += n
		if errors.Is(err, io.EOF) {
			if filled == 0 {
				return 0, io.EOF
			}
			return filled, nil
		}
		if err != nil {
			return filled, err
		}
	}
	return filled, nil
}
