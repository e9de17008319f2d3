package evaluate

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mergectl/react-triton/triton"
)

// writeNpy writes a .npy file of dtype descr and shape holding data.
func writeNpy(t *testing.T, path, descr, shape string, data any) {
	t.Helper()
	h := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape)
	h += strings.Repeat(" ", 63-(10+len(h))%64) + "\n"
	var b bytes.Buffer
	b.WriteString("\x93NUMPY\x01\x00")
	binary.Write(&b, binary.LittleEndian, uint16(len(h)))
	b.WriteString(h)
	binary.Write(&b, binary.LittleEndian, data)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// readFloats reads every sample of s, one floating-point tensor, as
// float32.
func readFloats(t *testing.T, s Samples) []float32 {
	t.Helper()
	specs := s.Specs()
	if len(specs) != 1 {
		t.Fatalf("%d tensors, want 1", len(specs))
	}
	raw, err := s.Read(span(0, s.Rows()))
	if err != nil {
		t.Fatal(err)
	}
	v, err := triton.DecodeFloat32(nil, specs[0].Datatype, raw[0])
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestLoadTask(t *testing.T) {
	dir := t.TempDir()
	writeNpy(t, filepath.Join(dir, "a.npy"), "<f4", "(3, 1, 2)", []float32{1, 2, 3, 4, 5, 6})
	writeNpy(t, filepath.Join(dir, "a.labels.npy"), "<i8", "(3,)", []int64{2, 0, 1})
	writeNpy(t, filepath.Join(dir, "b.npy"), "<f8", "(2, 2)", []float64{1, 2, 3, 4})
	writeNpy(t, filepath.Join(dir, "b.labels.npy"), "<i4", "(2,)", []int32{1, 1})
	writeNpy(t, filepath.Join(dir, "c.npy"), "<f4", "(1, 1)", []float32{1}) // no labels: not a task
	// d: an archive of two integer inputs.
	ids, mask := filepath.Join(t.TempDir(), "ids.npy"), filepath.Join(t.TempDir(), "mask.npy")
	writeNpy(t, ids, "<i8", "(2, 3)", []int64{1, 2, 3, 4, 5, 6})
	writeNpy(t, mask, "|u1", "(2, 3)", []uint8{1, 1, 0, 1, 0, 0})
	writeZip(t, filepath.Join(dir, "d.npz"), map[string]string{"input_ids.npy": ids, "attention_mask.npy": mask})
	writeNpy(t, filepath.Join(dir, "d.labels.npy"), "|u1", "(2,)", []uint8{0, 3})
	tasks, err := DiscoverTasks(dir)
	if err != nil || !slices.Equal(tasks, []string{"a", "b", "d"}) {
		t.Fatalf("DiscoverTasks = %v, %v", tasks, err)
	}
	a, err := LoadTask(dir, "a")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if !slices.Equal(a.Samples.Specs()[0].Shape, []int64{1, 2}) || !slices.Equal(a.Labels, []int64{2, 0, 1}) || readFloats(t, a.Samples)[5] != 6 {
		t.Errorf("a = %+v", a)
	}
	b, err := LoadTask(dir, "b")
	if err != nil || !slices.Equal(readFloats(t, b.Samples), []float32{1, 2, 3, 4}) || !slices.Equal(b.Labels, []int64{1, 1}) {
		t.Errorf("b = %+v, %v", b, err)
	}
	defer b.Close()
	d, err := LoadTask(dir, "d")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	specs := d.Samples.Specs()
	if len(specs) != 2 || specs[0].Name != "attention_mask" || specs[0].Datatype != triton.UINT8 || specs[1].Name != "input_ids" ||
		specs[1].Datatype != triton.INT64 || !slices.Equal(d.Labels, []int64{0, 3}) {
		t.Errorf("d: specs %+v, labels %v", specs, d.Labels)
	}
}

// writeZip writes an archive (stored, as numpy.savez writes) of the files.
func writeZip(t *testing.T, path string, files map[string]string) {
	t.Helper()
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	for name, src := range files {
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		w, err := z.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadTaskErrors(t *testing.T) {
	for _, tc := range []struct {
		name           string
		inDescr, shape string
		in             any
		lDescr, lShape string
		labels         any
		want           string
	}{
		{"count", "<f4", "(2, 1)", []float32{1, 2}, "<i8", "(3,)", []int64{0, 1, 2}, "want (2,), one label per input"},
		{"negative", "<f4", "(2, 1)", []float32{1, 2}, "<i8", "(2,)", []int64{0, -1}, "label -1 of sample 1"},
		{"label dtype", "<f4", "(2, 1)", []float32{1, 2}, "<f4", "(2,)", []float32{0, 1}, `dtype "<f4": want int64`},
		{"input dtype", "<c8", "(2, 1)", []complex64{1, 2}, "<i8", "(2,)", []int64{0, 1}, `dtype "<c8" has no Triton datatype`},
		{"1-D inputs", "<f4", "(2,)", []float32{1, 2}, "<i8", "(2,)", []int64{0, 1}, "want N samples along the first axis"},
		{"truncated", "<f4", "(3, 1)", []float32{1, 2}, "<i8", "(3,)", []int64{0, 1, 2}, "truncated"},
	} {
		dir := t.TempDir()
		writeNpy(t, filepath.Join(dir, "t.npy"), tc.inDescr, tc.shape, tc.in)
		writeNpy(t, filepath.Join(dir, "t.labels.npy"), tc.lDescr, tc.lShape, tc.labels)
		if _, err := LoadTask(dir, "t"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: LoadTask = %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}

func TestSubsetIsSeededNotAPrefix(t *testing.T) {
	x := &Floats{Shape: []int64{1}}
	tk := &Task{Name: "t", Samples: x}
	for i := range 100 {
		x.X = append(x.X, float32(i))
		tk.Labels = append(tk.Labels, int64(i/10)) // sorted by class, as mnist was
	}
	s := tk.Subset(20, 7)
	if s.N() != 20 || s.Samples.Rows() != 20 || slices.Equal(s.Labels, tk.Labels[:20]) {
		t.Fatalf("subset %v", s.Labels)
	}
	v := readFloats(t, s.Samples)
	for k := range v {
		if int64(v[k])/10 != s.Labels[k] || (k > 0 && v[k] <= v[k-1]) {
			t.Fatalf("subset rows do not correspond or are out of order: %v %v", v, s.Labels)
		}
	}
	if classes := len(slices.Compact(slices.Clone(s.Labels))); classes < 6 {
		t.Errorf("20 of 100 samples cover %d of 10 classes", classes)
	}
	if again := tk.Subset(20, 7); !slices.Equal(readFloats(t, again.Samples), v) {
		t.Error("the same seed drew another subset")
	}
	if other := tk.Subset(20, 8); slices.Equal(readFloats(t, other.Samples), v) {
		t.Error("another seed drew the same subset")
	}
	if tk.Subset(0, 1) != tk || tk.Subset(100, 1) != tk {
		t.Error("a limit of 0 or ≥ N is not the whole task")
	}
}
