package embeddings

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/mergectl/react-triton/calibrate/pairs"
	"github.com/mergectl/react-triton/internal/npyfile"
)

func TestNPYPairStreamsInChunks(t *testing.T) {
	// A file much larger than the chunk is read chunk by chunk: the reader
	// never asks for more than the chunk's bytes.
	dir := t.TempDir()
	n, d := 1000, 4
	v := make([]float32, n*d)
	for i := range v {
		v[i] = float32(i % 17)
	}
	var b bytes.Buffer
	npyfile.WriteFloat32(&b, n, d, v)
	os.WriteFile(filepath.Join(dir, "a"+MergedSuffix), b.Bytes(), 0o644)
	os.WriteFile(filepath.Join(dir, "a"+ExpertSuffix), b.Bytes(), 0o644)
	p, err := Open(dir, "a")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	mtl := make([]float64, 3*d)
	ind := make([]float64, 3*d)
	rows := 0
	for {
		k, err := p.Next(mtl, ind)
		if err != nil {
			break
		}
		if k > 3 {
			t.Fatalf("Next returned %d rows for room for 3", k)
		}
		if mtl[0] != float64(v[rows*d]) {
			t.Fatalf("row %d: got %v, want %v", rows, mtl[0], v[rows*d])
		}
		rows += k
	}
	if rows != n {
		t.Errorf("read %d rows, want %d", rows, n)
	}
}

// TestAccumulateMemoryIsBounded checks that fitting streams: the bytes
// allocated while accumulating a task do not grow with its number of rows.
func TestAccumulateMemoryIsBounded(t *testing.T) {
	dir := t.TempDir()
	const n, d = 40000, 4
	v := make([]float32, n*d)
	for i := range v {
		v[i] = float32(i%13) - 6
	}
	for _, suffix := range []string{MergedSuffix, ExpertSuffix} {
		if err := npyfile.WriteFileFloat32(filepath.Join(dir, "big"+suffix), n, d, v); err != nil {
			t.Fatal(err)
		}
	}
	allocated := func() uint64 {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.TotalAlloc
	}
	p, err := Open(dir, "big")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	before := allocated()
	acc, err := pairs.Accumulate(p, 256, nil)
	if err != nil {
		t.Fatal(err)
	}
	used := allocated() - before
	// The two files hold 2·n·d float32 (1.28 MB), 2.56 MB once widened.
	if acc.N() != n || used > 256<<10 {
		t.Errorf("accumulating %d rows allocated %d bytes; want O(D² + chunk), well under 256 KiB", acc.N(), used)
	}
}
