package evaluate

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
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

func TestLoadTask(t *testing.T) {
	dir := t.TempDir()
	writeNpy(t, filepath.Join(dir, "a.npy"), "<f4", "(3, 1, 2)", []float32{1, 2, 3, 4, 5, 6})
	writeNpy(t, filepath.Join(dir, "a.labels.npy"), "<i8", "(3,)", []int64{2, 0, 1})
	writeNpy(t, filepath.Join(dir, "b.npy"), "<f8", "(2, 2)", []float64{1, 2, 3, 4})
	writeNpy(t, filepath.Join(dir, "b.labels.npy"), "<i4", "(2,)", []int32{1, 1})
	writeNpy(t, filepath.Join(dir, "c.npy"), "<f4", "(1, 1)", []float32{1}) // no labels: not a task
	tasks, err := DiscoverTasks(dir)
	if err != nil || !slices.Equal(tasks, []string{"a", "b"}) {
		t.Fatalf("DiscoverTasks = %v, %v", tasks, err)
	}
	a, err := LoadTask(dir, "a")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Shape, []int64{1, 2}) || !slices.Equal(a.Labels, []int64{2, 0, 1}) || a.Inputs[5] != 6 {
		t.Errorf("a = %+v", a)
	}
	b, err := LoadTask(dir, "b")
	if err != nil || !slices.Equal(b.Inputs, []float32{1, 2, 3, 4}) || !slices.Equal(b.Labels, []int64{1, 1}) {
		t.Errorf("b = %+v, %v", b, err)
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
		{"input dtype", "<i8", "(2, 1)", []int64{1, 2}, "<i8", "(2,)", []int64{0, 1}, `dtype "<i8": want float32`},
		{"1-D inputs", "<f4", "(2,)", []float32{1, 2}, "<i8", "(2,)", []int64{0, 1}, "want samples along the first axis"},
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
	tk := &Task{Name: "t", Shape: []int64{1}}
	for i := range 100 {
		tk.Inputs = append(tk.Inputs, float32(i))
		tk.Labels = append(tk.Labels, int64(i/10)) // sorted by class, as mnist was
	}
	s := tk.Subset(20, 7)
	if s.N() != 20 || slices.Equal(s.Labels, tk.Labels[:20]) {
		t.Fatalf("subset %v", s.Labels)
	}
	for k, v := range s.Inputs {
		if int64(v)/10 != s.Labels[k] || (k > 0 && v <= s.Inputs[k-1]) {
			t.Fatalf("subset rows do not correspond or are out of order: %v %v", s.Inputs, s.Labels)
		}
	}
	if classes := len(slices.Compact(slices.Clone(s.Labels))); classes < 6 {
		t.Errorf("20 of 100 samples cover %d of 10 classes", classes)
	}
	if again := tk.Subset(20, 7); !slices.Equal(again.Inputs, s.Inputs) {
		t.Error("the same seed drew another subset")
	}
	if other := tk.Subset(20, 8); slices.Equal(other.Inputs, s.Inputs) {
		t.Error("another seed drew the same subset")
	}
	if tk.Subset(0, 1) != tk || tk.Subset(100, 1) != tk {
		t.Error("a limit of 0 or ≥ N is not the whole task")
	}
}
