package react

import (
	"maps"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
)

// TestProvenanceRoundTrip checks that a task's provenance is written as
// task.<name>.<key> metadata, covered by the metadata checksum, and read
// back; and that the format's own fields are refused as keys.
func TestProvenanceRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	c := components(t, 0.1, NormSum, randomSample(rng, "a", 20, 3, 0.1), randomSample(rng, "b", 20, 3, 0.1))
	c.Tasks[0].Provenance = map[string]string{"subset.fraction": "0.5", "subset.seed": "7"}
	path := filepath.Join(t.TempDir(), "c.safetensors")
	if err := SaveComponents(path, c); err != nil {
		t.Fatal(err)
	}
	got, err := LoadComponents(path)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got.Tasks[0].Provenance, c.Tasks[0].Provenance) || got.Tasks[1].Provenance != nil {
		t.Errorf("provenance read back %v and %v, want %v and none", got.Tasks[0].Provenance, got.Tasks[1].Provenance, c.Tasks[0].Provenance)
	}
	c.Tasks[1].Provenance = map[string]string{"n": "3"}
	if err := SaveComponents(path, c); err == nil || !strings.Contains(err.Error(), `provenance key "n" is reserved`) {
		t.Errorf("SaveComponents with provenance key n: %v", err)
	}
}
