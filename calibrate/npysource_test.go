package calibrate

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mergectl/react-triton/calibrate/embeddings"
	"github.com/mergectl/react-triton/calibrate/pairs"
	"github.com/mergectl/react-triton/calibrate/pairs/pairstest"
)

// TestNPYPairNonFinite checks that a NaN or infinite feature is reported
// with the file it is in, its row in that file and its column, whatever
// the chunk size, through Accumulate and through calibrate fit.
func TestNPYPairNonFinite(t *testing.T) {
	for _, tc := range []struct {
		name     string
		expert   bool
		row, col int
		v        float64
		want     string
	}{
		{"NaN merged", false, 7, 1, math.NaN(), "a.merged.npy: row 7, column 1: value NaN: want finite features"},
		{"+Inf expert", true, 0, 2, math.Inf(1), "a.expert.npy: row 0, column 2: value +Inf"},
		{"-Inf expert, last row", true, 9, 0, math.Inf(-1), "a.expert.npy: row 9, column 0: value -Inf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			mtl, ind := pairstest.Features(rand.New(rand.NewPCG(1, 2)), 10, 3)
			if tc.expert {
				ind.Set(tc.row, tc.col, tc.v)
			} else {
				mtl.Set(tc.row, tc.col, tc.v)
			}
			writeNPY(t, filepath.Join(dir, "a"+embeddings.MergedSuffix), mtl, false)
			writeNPY(t, filepath.Join(dir, "a"+embeddings.ExpertSuffix), ind, tc.expert)
			for _, chunk := range []int{1, 4, 100} {
				p, err := embeddings.Open(dir, "a")
				if err != nil {
					t.Fatal(err)
				}
				_, err = pairs.Accumulate(p, chunk, nil)
				p.Close()
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "task a: "+dir) {
					t.Errorf("chunk %d: Accumulate error %v, want one containing %q", chunk, err, tc.want)
				}
			}
			out := filepath.Join(t.TempDir(), "c.safetensors")
			r := run(t, "fit", "--embeddings", dir, "--out", out, "--chunk", "4")
			if r.code != ExitFailure || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("fit: exit %d, stderr %q; want %q", r.code, r.stderr, tc.want)
			}
		})
	}
}
