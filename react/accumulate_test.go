package react

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestAccumulateMatchesRaw checks S, G and N against plain loops over the
// samples.
func TestAccumulateMatchesRaw(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 1))
	s := randomSample(rng, "cars", 57, 7, 0.2)
	acc := NewAccumulator(7)
	if err := acc.AddFloat64(s.MTL, s.Ind); err != nil {
		t.Fatal(err)
	}
	st, err := acc.Stats("cars", ModelRef{Name: "vit_cars", Output: "features"})
	if err != nil {
		t.Fatal(err)
	}
	if st.N != 57 || acc.N() != 57 || acc.D() != 7 {
		t.Errorf("N = %d (acc %d), D = %d; want 57, 7", st.N, acc.N(), acc.D())
	}
	if st.Name != "cars" || st.Expert.Name != "vit_cars" {
		t.Errorf("name %q, expert %+v", st.Name, st.Expert)
	}
	assertClose(t, "S", st.S, s.RawS(), 1e-13)
	assertClose(t, "G", st.G, s.RawG(), 1e-13)
	assertClose(t, "W_orth", st.WOrth, orthRef(t, s.RawS()), 1e-10)
	// Stats returns copies: accumulating more must not change them.
	before := mat.DenseCopyOf(st.S)
	if err := acc.AddFloat64(s.MTL, s.Ind); err != nil {
		t.Fatal(err)
	}
	if !mat.Equal(before, st.S) {
		t.Error("Stats shares memory with the accumulator")
	}
}

// TestAccumulateStreaming checks that any split into batches, and merging
// shards, gives the same statistics as one pass.
func TestAccumulateStreaming(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 1))
	const n, d = 61, 9
	s := randomSample(rng, "dtd", n, d, 0.2)
	one := NewAccumulator(d)
	if err := one.AddFloat64(s.MTL, s.Ind); err != nil {
		t.Fatal(err)
	}
	want, err := one.Stats("dtd", ModelRef{})
	if err != nil {
		t.Fatal(err)
	}
	feed := func(acc *Accumulator, from, to int) {
		if err := acc.AddFloat64(s.MTL[from*d:to*d], s.Ind[from*d:to*d]); err != nil {
			t.Fatal(err)
		}
	}
	check := func(name string, acc *Accumulator) {
		t.Helper()
		got, err := acc.Stats("dtd", ModelRef{})
		if err != nil {
			t.Fatal(err)
		}
		if got.N != n {
			t.Errorf("%s: N = %d, want %d", name, got.N, n)
		}
		assertClose(t, name+" S", got.S, want.S, 1e-13)
		assertClose(t, name+" G", got.G, want.G, 1e-13)
	}
	for _, size := range []int{1, 7, n, n + 5} {
		acc := NewAccumulator(d)
		for from := 0; from < n; from += size {
			feed(acc, from, min(from+size, n))
		}
		check("batch size "+strconv.Itoa(size), acc)
	}
	uneven := NewAccumulator(d)
	for _, cut := range [][2]int{{0, 0}, {0, 3}, {3, 4}, {4, 30}, {30, 61}} {
		feed(uneven, cut[0], cut[1])
	}
	check("uneven", uneven)

	shards := []*Accumulator{NewAccumulator(d), NewAccumulator(d), NewAccumulator(d)}
	feed(shards[0], 0, 20)
	feed(shards[1], 20, 21)
	feed(shards[2], 21, n)
	merged := NewAccumulator(d)
	for _, sh := range shards {
		if err := merged.Merge(sh); err != nil {
			t.Fatal(err)
		}
	}
	check("merged shards", merged)

	self := NewAccumulator(d)
	feed(self, 0, n)
	if err := self.Merge(self); err != nil {
		t.Fatal(err)
	}
	got, _ := self.Stats("dtd", ModelRef{})
	var twice mat.Dense
	twice.Scale(2, want.S)
	if got.N != 2*n || relErr(got.S, &twice) > 1e-15 {
		t.Errorf("self-merge: N = %d, S error %.3g", got.N, relErr(got.S, &twice))
	}
	if err := merged.Merge(NewAccumulator(d + 1)); err == nil {
		t.Error("merging accumulators of different D succeeded")
	}
}

// TestAccumulateFloat32 checks that float32 batches give S and G within 1e-5
// relative error of float64 accumulation of the same samples.
func TestAccumulateFloat32(t *testing.T) {
	rng := rand.New(rand.NewPCG(22, 1))
	const n, d = 300, 16
	s := randomSample(rng, "eurosat", n, d, 0.2)
	m32, i32 := make([]float32, n*d), make([]float32, n*d)
	for i := range s.MTL {
		m32[i], i32[i] = float32(s.MTL[i]), float32(s.Ind[i])
	}
	a64, a32 := NewAccumulator(d), NewAccumulator(d)
	if err := a64.AddFloat64(s.MTL, s.Ind); err != nil {
		t.Fatal(err)
	}
	// Two float32 batches of different sizes exercise the reused buffer.
	if err := a32.AddFloat32(m32[:100*d], i32[:100*d]); err != nil {
		t.Fatal(err)
	}
	if err := a32.AddFloat32(m32[100*d:], i32[100*d:]); err != nil {
		t.Fatal(err)
	}
	s64, _ := a64.Stats("eurosat", ModelRef{})
	s32, _ := a32.Stats("eurosat", ModelRef{})
	if s32.N != n {
		t.Errorf("N = %d", s32.N)
	}
	for _, c := range []struct {
		name      string
		got, want mat.Matrix
	}{{"S", s32.S, s64.S}, {"G", s32.G, s64.G}} {
		e := relErr(c.got, c.want)
		if e > 1e-5 {
			t.Errorf("%s: float32 relative error %.3g > 1e-5", c.name, e)
		}
		if e == 0 {
			t.Errorf("%s: float32 and float64 agree exactly; the test compares nothing", c.name)
		}
	}
}

// TestAccumulateErrors checks the validation of batches and Stats.
func TestAccumulateErrors(t *testing.T) {
	const d = 3
	good := []float64{1, 2, 3, 4, 5, 6}
	for _, tc := range []struct {
		name     string
		mtl, ind []float64
		want     string
	}{
		{"unequal lengths", good, good[:3], "merged batch has 6 values but expert batch has 3"},
		{"not whole rows", good[:4], good[:4], "not a whole number of rows of D=3"},
		{"NaN merged", []float64{1, 2, 3, 4, math.NaN(), 6}, good, "merged features, row 1 of the batch (sample 1), column 1"},
		{"Inf expert", good, []float64{math.Inf(-1), 2, 3, 4, 5, 6}, "expert features, row 0 of the batch (sample 0), column 0"},
	} {
		acc := NewAccumulator(d)
		err := acc.AddFloat64(tc.mtl, tc.ind)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", tc.name, err, tc.want)
		}
		if acc.N() != 0 {
			t.Errorf("%s: rejected batch changed N to %d", tc.name, acc.N())
		}
	}
	acc := NewAccumulator(d)
	m32 := []float32{1, 2, 3, float32(math.NaN()), 5, 6}
	if err := acc.AddFloat32(m32, m32); err == nil || !strings.Contains(err.Error(), "row 1") {
		t.Errorf("float32 NaN: %v", err)
	}
	if err := acc.AddFloat64(nil, nil); err != nil || acc.N() != 0 {
		t.Errorf("empty batch: %v, N=%d", err, acc.N())
	}
	if _, err := acc.Stats("cars", ModelRef{}); err == nil {
		t.Error("Stats with no samples succeeded")
	}
	_ = acc.AddFloat64(good, good)
	if _, err := acc.Stats("bad.name", ModelRef{}); err == nil {
		t.Error("Stats with an invalid task name succeeded")
	}
	if err := acc.Merge(nil); err == nil {
		t.Error("Merge(nil) succeeded")
	}
}

// TestAccumulatorRestore checks that an accumulator restored from its state
// continues with the same bits as the original.
func TestAccumulatorRestore(t *testing.T) {
	const d = 5
	batch := func(k int) ([]float64, []float64) {
		mtl, ind := make([]float64, 3*d), make([]float64, 3*d)
		for i := range mtl {
			mtl[i] = math.Sin(float64(k*100 + i))
			ind[i] = math.Cos(float64(k*77 + i))
		}
		return mtl, ind
	}
	a := NewAccumulator(d)
	for k := range 2 {
		if err := a.AddFloat64(batch(k)); err != nil {
			t.Fatal(err)
		}
	}
	n, s, g := a.State()
	b, err := RestoreAccumulator(d, n, s, g)
	if err != nil {
		t.Fatal(err)
	}
	for k := 2; k < 4; k++ {
		for _, acc := range []*Accumulator{a, b} {
			if err := acc.AddFloat64(batch(k)); err != nil {
				t.Fatal(err)
			}
		}
	}
	na, sa, ga := a.State()
	nb, sb, gb := b.State()
	if na != nb || !slices.Equal(sa, sb) || !slices.Equal(ga, gb) {
		t.Errorf("restored accumulator diverged: N %d vs %d", na, nb)
	}
	if _, err := RestoreAccumulator(d, 1, s[:3], g); err == nil {
		t.Error("RestoreAccumulator accepted a short S")
	}
}

// TestAccumulatorSumSquares checks Σ ‖z_ind‖² against a plain loop over the
// rows, through batches, Merge, Stats and a restore with and without it.
func TestAccumulatorSumSquares(t *testing.T) {
	const d = 4
	rng := rand.New(rand.NewPCG(3, 4))
	s := randomSample(rng, "a", 23, d, 0.3)
	want := 0.0
	for _, v := range s.Ind {
		want += v * v
	}
	closeTo := func(got float64) bool { return math.Abs(got-want) <= 1e-12*want }

	whole := NewAccumulator(d)
	if yy, ok := whole.SumSquares(); yy != 0 || !ok {
		t.Errorf("empty accumulator: SumSquares = %v, %v; want 0, true", yy, ok)
	}
	if err := whole.AddFloat64(s.MTL, s.Ind); err != nil {
		t.Fatal(err)
	}
	if yy, ok := whole.SumSquares(); !closeTo(yy) || !ok {
		t.Errorf("SumSquares = %v, %v; want %v, true", yy, ok, want)
	}
	st, err := whole.Stats("a", ModelRef{})
	if err != nil {
		t.Fatal(err)
	}
	if !closeTo(st.SumSquares) {
		t.Errorf("Stats: SumSquares = %v, want %v", st.SumSquares, want)
	}

	// Two halves merged.
	half := 11 * d
	a, b := NewAccumulator(d), NewAccumulator(d)
	if err := a.AddFloat64(s.MTL[:half], s.Ind[:half]); err != nil {
		t.Fatal(err)
	}
	if err := b.AddFloat64(s.MTL[half:], s.Ind[half:]); err != nil {
		t.Fatal(err)
	}
	if err := a.Merge(b); err != nil {
		t.Fatal(err)
	}
	if yy, ok := a.SumSquares(); !closeTo(yy) || !ok {
		t.Errorf("merged: SumSquares = %v, %v; want %v, true", yy, ok, want)
	}

	// Restored with the value, and without it (an old checkpoint): the
	// latter never knows it, nor does what it is merged into.
	n, S, G := b.State()
	yyb, _ := b.SumSquares()
	with, err := RestoreAccumulatorSquares(d, n, S, G, yyb)
	if err != nil {
		t.Fatal(err)
	}
	if err := with.AddFloat64(s.MTL[:half], s.Ind[:half]); err != nil {
		t.Fatal(err)
	}
	if yy, ok := with.SumSquares(); !closeTo(yy) || !ok {
		t.Errorf("restored with it: SumSquares = %v, %v; want %v, true", yy, ok, want)
	}
	without, err := RestoreAccumulator(d, n, S, G)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := without.SumSquares(); ok {
		t.Error("restored without it: SumSquares known")
	}
	if st, err := without.Stats("a", ModelRef{}); err != nil || st.SumSquares != 0 {
		t.Errorf("restored without it: Stats SumSquares = %v (%v), want 0", st.SumSquares, err)
	}
	fresh := NewAccumulator(d)
	if err := fresh.Merge(without); err != nil {
		t.Fatal(err)
	}
	if _, ok := fresh.SumSquares(); ok {
		t.Error("merged with an accumulator that does not know it: SumSquares known")
	}
	for _, bad := range []float64{-1, math.NaN(), math.Inf(1)} {
		if _, err := RestoreAccumulatorSquares(d, n, S, G, bad); err == nil {
			t.Errorf("RestoreAccumulatorSquares accepted %v", bad)
		}
	}
}
