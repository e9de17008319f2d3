package evaluate

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/mergectl/react-triton/internal/samples"
	"github.com/mergectl/react-triton/triton"
)

// Samples are the samples a model runs on: one or more tensors per sample
// (Specs), read by rows in Triton's raw encoding. A task's inputs are a
// *samples.Set (a .npy or .npz file), features are Floats.
type Samples interface {
	// Specs describes the tensors of a sample, in the order Read returns
	// them.
	Specs() []samples.Spec
	// Rows returns the number of samples.
	Rows() int
	// Read returns the samples at rows (ascending), each tensor's raw
	// contents.
	Read(rows []int) ([][]byte, error)
}

// Floats are samples of one float32 tensor held in memory: N rows of
// Shape, in C order.
type Floats struct {
	X     []float32
	Shape []int64
}

// size returns the number of values of one sample.
func (f *Floats) size() int {
	n := 1
	for _, d := range f.Shape {
		n *= int(d)
	}
	return n
}

// Specs implements Samples.
func (f *Floats) Specs() []samples.Spec {
	return []samples.Spec{{Datatype: triton.FP32, Shape: f.Shape}}
}

// Rows implements Samples.
func (f *Floats) Rows() int {
	if s := f.size(); s > 0 {
		return len(f.X) / s
	}
	return 0
}

// Read implements Samples.
func (f *Floats) Read(rows []int) ([][]byte, error) {
	s := f.size()
	b := make([]byte, 0, 4*s*len(rows))
	for _, r := range rows {
		if r < 0 || r >= f.Rows() {
			return nil, fmt.Errorf("sample %d of %d", r, f.Rows())
		}
		for _, v := range f.X[r*s : (r+1)*s] {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
	}
	return [][]byte{b}, nil
}

// subset is some rows of Samples, in order.
type subset struct {
	Samples
	rows []int // ascending indices into the Samples' rows
}

func (s *subset) Rows() int { return len(s.rows) }

func (s *subset) Read(rows []int) ([][]byte, error) {
	at := make([]int, len(rows))
	for i, r := range rows {
		at[i] = s.rows[r]
	}
	return s.Samples.Read(at)
}

// span returns the indices lo to hi-1.
func span(lo, hi int) []int {
	idx := make([]int, hi-lo)
	for i := range idx {
		idx[i] = lo + i
	}
	return idx
}
