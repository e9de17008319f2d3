package partialfile

import (
	"errors"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/componentsfile"
	"github.com/mergectl/react-triton/react/safetensors"
)

func TestSaveLoad(t *testing.T) {
	const d = 3
	acc := react.NewAccumulator(d)
	mtl, ind := make([]float64, 4*d), make([]float64, 4*d)
	for i := range mtl {
		mtl[i], ind[i] = math.Sin(float64(i)), math.Cos(float64(i))
	}
	if err := acc.AddFloat64(mtl, ind); err != nil {
		t.Fatal(err)
	}
	f := &File{
		D: d, Beta: 0.25, Normalization: react.NormMean,
		Backbone: react.ModelRef{Name: "m", Version: "2", Output: "feature"},
		Run:      "run description", Shard: "1/4",
		Tasks: []*Task{{Name: "a", Expert: react.ModelRef{Name: "e", Output: "o"}, Acc: acc, Done: 4, Total: 9,
			Provenance: map[string]string{"subset.seed": "3"}}},
	}
	path := filepath.Join(t.TempDir(), "p.safetensors")
	if err := Save(path, f); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	gt := got.Tasks[0]
	n1, s1, g1 := acc.State()
	n2, s2, g2 := gt.Acc.State()
	if got.D != d || got.Beta != 0.25 || got.Normalization != react.NormMean || got.Backbone != f.Backbone ||
		got.Run != f.Run || got.Shard != f.Shard || gt.Name != "a" || gt.Expert != f.Tasks[0].Expert ||
		gt.Done != 4 || gt.Total != 9 || gt.Complete() || !maps.Equal(gt.Provenance, f.Tasks[0].Provenance) {
		t.Errorf("read back %+v %+v", got, gt)
	}
	if n1 != n2 || !slices.Equal(s1, s2) || !slices.Equal(g1, g2) {
		t.Error("the sums differ after a round trip")
	}
	yy1, _ := acc.SumSquares()
	if yy2, ok := gt.Acc.SumSquares(); yy2 != yy1 || !ok || yy1 == 0 {
		t.Errorf("sum of squares read back %v (%v), wrote %v", yy2, ok, yy1)
	}

	// A flipped bit of the data is caught.
	b, _ := os.ReadFile(path)
	b[len(b)-1] ^= 1
	os.WriteFile(path, b, 0o644)
	if _, err := Load(path); !errors.Is(err, componentsfile.ErrChecksum) {
		t.Errorf("Load of a corrupt file: %v, want a checksum error", err)
	}
}

// TestLoadWithoutSumSquares checks that a file written before the sum of
// squares was recorded loads, its sums restored without it, and that a
// malformed one is refused.
func TestLoadWithoutSumSquares(t *testing.T) {
	const d = 2
	acc := react.NewAccumulator(d)
	if err := acc.AddFloat64([]float64{1, 2, 3, 4}, []float64{5, 6, 7, 8}); err != nil {
		t.Fatal(err)
	}
	f := &File{D: d, Normalization: react.NormSum, Tasks: []*Task{{Name: "a", Acc: acc, Done: 2, Total: 2}}}
	path := filepath.Join(t.TempDir(), "p.safetensors")
	if err := Save(path, f); err != nil {
		t.Fatal(err)
	}
	st, err := safetensors.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Header.Metadata["task.a.sum_squares"]; got != "174" {
		t.Fatalf("task.a.sum_squares = %q, want 174 (25+36+49+64)", got)
	}
	rewrite := func(edit func(md map[string]string)) {
		md := maps.Clone(st.Header.Metadata)
		edit(md)
		var ts []safetensors.Tensor
		for _, ti := range st.Tensors {
			tt, _ := st.Tensor(ti.Name)
			ts = append(ts, tt)
		}
		if err := safetensors.WriteFile(path, ts, md, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rewrite(func(md map[string]string) { delete(md, "task.a.sum_squares") })
	old, err := Load(path)
	if err != nil {
		t.Fatalf("a file without sum_squares: %v", err)
	}
	if _, ok := old.Tasks[0].Acc.SumSquares(); ok || old.Tasks[0].Acc.N() != 2 {
		t.Errorf("a file without sum_squares: N=%d, sum of squares known %v", old.Tasks[0].Acc.N(), ok)
	}
	for _, bad := range []string{"-1", "NaN", "x"} {
		rewrite(func(md map[string]string) { md["task.a.sum_squares"] = bad })
		if _, err := Load(path); err == nil {
			t.Errorf("sum_squares %q: loaded", bad)
		}
	}
}

// TestLiveFile checks a live file's replica, window and held-out sums
// through a round trip, and the refusal of held-out counts larger than the
// task's.
func TestLiveFile(t *testing.T) {
	const d = 2
	all, held := react.NewAccumulator(d), react.NewAccumulator(d)
	mtl, ind := []float64{1, 2, 3, 4, 5, 6}, []float64{6, 5, 4, 3, 2, 1}
	if err := all.AddFloat64(mtl, ind); err != nil {
		t.Fatal(err)
	}
	if err := held.AddFloat64(mtl[2:4], ind[2:4]); err != nil {
		t.Fatal(err)
	}
	window := time.Date(2026, 12, 1, 10, 30, 0, 123, time.UTC)
	f := &File{D: d, Beta: 10, Normalization: react.NormSum, Run: "live traffic", Replica: "sidecar-0", Window: window,
		Tasks: []*Task{{Name: "a", Acc: all, Held: held, Done: 3, Total: 3}}}
	path := filepath.Join(t.TempDir(), "live.safetensors")
	if err := Save(path, f); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Replica != "sidecar-0" || !got.Window.Equal(window) || got.Shard != "" {
		t.Errorf("replica %q, window %v, shard %q", got.Replica, got.Window, got.Shard)
	}
	h := got.Tasks[0].Held
	if h == nil {
		t.Fatal("held-out sums lost")
	}
	n1, s1, g1 := held.State()
	n2, s2, g2 := h.State()
	yy1, _ := held.SumSquares()
	yy2, ok := h.SumSquares()
	if n1 != n2 || !slices.Equal(s1, s2) || !slices.Equal(g1, g2) || yy1 != yy2 || !ok {
		t.Errorf("held-out sums differ after a round trip: N %d vs %d, yy %v vs %v", n1, n2, yy1, yy2)
	}
	if got.Tasks[0].Acc.N() != 3 {
		t.Errorf("all rows: N = %d, want 3", got.Tasks[0].Acc.N())
	}

	// A file of a fit has neither.
	f.Replica, f.Tasks[0].Held = "", nil
	if err := Save(path, f); err != nil {
		t.Fatal(err)
	}
	if got, err := Load(path); err != nil || got.Replica != "" || !got.Window.IsZero() || got.Tasks[0].Held != nil {
		t.Errorf("a fit's file: %v, replica %q, window %v", err, got.Replica, got.Window)
	}

	// More held-out rows than rows.
	f.Tasks[0].Held = react.NewAccumulator(d)
	if err := f.Tasks[0].Held.AddFloat64(append(mtl, mtl...), append(ind, ind...)); err != nil {
		t.Fatal(err)
	}
	if err := Save(path, f); err == nil {
		t.Error("Save of 6 held-out rows of 3: no error")
	}
}
