package partialfile

import (
	"errors"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/componentsfile"
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

	// A flipped bit of the data is caught.
	b, _ := os.ReadFile(path)
	b[len(b)-1] ^= 1
	os.WriteFile(path, b, 0o644)
	if _, err := Load(path); !errors.Is(err, componentsfile.ErrChecksum) {
		t.Errorf("Load of a corrupt file: %v, want a checksum error", err)
	}
}
