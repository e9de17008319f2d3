package pairs

import (
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/calibrate/pairs/pairstest"
	"github.com/mergectl/react-triton/react"
)

// TestAccumulateSource checks the accumulation loop against a Source
// that is not backed by files, as a Triton-backed source would be.
func TestAccumulateSource(t *testing.T) {
	mtl, ind := pairstest.Features(rand.New(rand.NewPCG(3, 4)), 23, 4)
	src := &memSource{mtl: mtl, ind: ind, batch: 5}
	var calls, total int
	acc, err := Accumulate(src, 8, func(n int) { calls++; total += n })
	if err != nil {
		t.Fatal(err)
	}
	if acc.N() != 23 || total != 23 || calls != 5 {
		t.Errorf("N=%d, progress total %d in %d calls; want 23 in 5", acc.N(), total, calls)
	}
	st, err := acc.Stats("m", react.ModelRef{})
	if err != nil {
		t.Fatal(err)
	}
	var s mat.Dense
	s.Mul(ind.T(), mtl)
	if !mat.EqualApprox(st.S, &s, 1e-10) {
		t.Error("S differs")
	}
	// A source that claims more pairs than it yields is an error.
	src = &memSource{mtl: mtl, ind: ind, batch: 5, claim: 30}
	if _, err := Accumulate(src, 8, nil); err == nil || !strings.Contains(err.Error(), "read 23 pairs, want 30") {
		t.Errorf("short source: %v", err)
	}
}

// memSource is an in-memory Source that yields at most batch rows per
// call, whatever room it is given.
type memSource struct {
	mtl, ind *mat.Dense
	batch    int
	next     int
	claim    int64
}

func (s *memSource) Task() string { return "m" }
func (s *memSource) Dim() int     { _, d := s.mtl.Dims(); return d }
func (s *memSource) Len() int64 {
	if s.claim > 0 {
		return s.claim
	}
	n, _ := s.mtl.Dims()
	return int64(n)
}
func (s *memSource) Close() error { return nil }
func (s *memSource) Next(mtl, ind []float64) (int, error) {
	n, d := s.mtl.Dims()
	k := min(len(mtl)/d, s.batch, n-s.next)
	if k == 0 {
		return 0, io.EOF
	}
	for i := 0; i < k; i++ {
		copy(mtl[i*d:], s.mtl.RawRowView(s.next+i))
		copy(ind[i*d:], s.ind.RawRowView(s.next+i))
	}
	s.next += k
	return k, nil
}
