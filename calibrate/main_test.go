package calibrate

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sbinet/npyio/npy"
	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/internal/testutil"
)

// result is what one in-process run of the command gave.
type result struct {
	stdout, stderr string
	code           int
}

// run runs the calibrate command in-process with args.
func run(t *testing.T, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(args, &out, &errb)
	return result{out.String(), errb.String(), code}
}

// mustRun runs the command and fails the test unless it succeeds.
func mustRun(t *testing.T, args ...string) result {
	t.Helper()
	r := run(t, args...)
	if r.code != ExitOK {
		t.Fatalf("calibrate %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r
}

// checkFailedFit checks the run r of a fit that fails, writing
// c.safetensors in outDir: its exit code is code, its standard error
// holds each of want, and outDir holds nothing but the checkpoint
// directory, which keeps the sums of the samples read before the failure.
func checkFailedFit(t *testing.T, r result, code int, want []string, outDir string) {
	t.Helper()
	if r.code != code {
		t.Errorf("exit %d, want %d; stderr:\n%s", r.code, code, r.stderr)
	}
	for _, w := range want {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr %q does not contain %q", r.stderr, w)
		}
	}
	entries, _ := os.ReadDir(outDir)
	for _, e := range entries {
		if e.Name() != "c.safetensors.ckpt" {
			t.Errorf("a failed fit left %s in the output directory", e.Name())
		}
	}
}

// golden compares got with testdata/name, or rewrites it with -update
// (testutil.Golden).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	testutil.Golden(t, filepath.Join("testdata", name), got)
}

// writeNPY writes m to path with sbinet/npyio, an implementation
// independent of the one calibrate reads with, as float64 or float32.
func writeNPY(t *testing.T, path string, m *mat.Dense, f32 bool) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var val any = m
	if f32 {
		// npyio writes a fixed-size [r][c]float32 array as a 2-D <f4 array.
		r, c := m.Dims()
		arr := reflect.New(reflect.ArrayOf(r, reflect.ArrayOf(c, reflect.TypeFor[float32]()))).Elem()
		for i := 0; i < r; i++ {
			for j := 0; j < c; j++ {
				arr.Index(i).Index(j).SetFloat(m.At(i, j))
			}
		}
		val = arr.Interface()
	}
	if err := npy.Write(f, val); err != nil {
		t.Fatal(err)
	}
}

// readW reads a W.npy written by solve.
func readW(t *testing.T, path string) *mat.Dense {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := npy.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if r.Header.Descr.Type != "<f4" || len(r.Header.Descr.Shape) != 2 || r.Header.Descr.Fortran {
		t.Fatalf("%s: header %v, want a C-order <f4 2-D array", path, r.Header)
	}
	var v []float32
	if err := r.Read(&v); err != nil {
		t.Fatal(err)
	}
	rows, cols := r.Header.Descr.Shape[0], r.Header.Descr.Shape[1]
	w := mat.NewDense(rows, cols, nil)
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			w.Set(i, j, float64(v[i*cols+j]))
		}
	}
	return w
}
