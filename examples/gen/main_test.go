package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestBundledExampleIsReproducible regenerates the bundled example and
// compares it byte for byte with the committed files.
func TestBundledExampleIsReproducible(t *testing.T) {
	tmp := t.TempDir()
	calib, heldout := filepath.Join(tmp, "embeddings"), filepath.Join(tmp, "heldout")
	if err := generate(calib, heldout, 16, 200, 1); err != nil {
		t.Fatal(err)
	}
	for _, pair := range [][2]string{{calib, "../embeddings"}, {heldout, "../heldout"}} {
		entries, err := os.ReadDir(pair[0])
		if err != nil {
			t.Fatal(err)
		}
		committed, _ := os.ReadDir(pair[1])
		if len(entries) != len(committed) || len(entries) != 6 {
			t.Errorf("%s: %d files generated, %d committed, want 6", pair[1], len(entries), len(committed))
		}
		for _, e := range entries {
			got, _ := os.ReadFile(filepath.Join(pair[0], e.Name()))
			want, err := os.ReadFile(filepath.Join(pair[1], e.Name()))
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s differs from a fresh generation (%v); rerun go run ./examples/gen", filepath.Join(pair[1], e.Name()), err)
			}
		}
	}
}
