package pairs

import (
	"errors"
	"io"
)

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
