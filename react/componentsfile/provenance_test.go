package componentsfile

import (
	"maps"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mergectl/react-triton/react/internal/reacttest"
)

// TestProvenanceRoundTrip checks that a task's provenance is written as
// task.<name>.<key> metadata, covered by the metadata checksum, and read
// back; and that the format's own fields are refused as keys.
func TestProvenanceRoundTrip(t *testing.T) {
	c := reacttest.Components(t, 3, 1, "a", "b")
	c.Tasks[0].Provenance = map[string]string{"subset.fraction": "0.5", "subset.seed": "7"}
	path := filepath.Join(t.TempDir(), "c.safetensors")
	if err := Save(path, c); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got.Tasks[0].Provenance, c.Tasks[0].Provenance) || got.Tasks[1].Provenance != nil {
		t.Errorf("provenance read back %v and %v, want %v and none", got.Tasks[0].Provenance, got.Tasks[1].Provenance, c.Tasks[0].Provenance)
	}
	c.Tasks[1].Provenance = map[string]string{"n": "3"}
	if err := Save(path, c); err == nil || !strings.Contains(err.Error(), `provenance key "n" is reserved`) {
		t.Errorf("Save with provenance key n: %v", err)
	}
}
