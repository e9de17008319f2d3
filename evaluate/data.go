package evaluate

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mergectl/react-triton/internal/npyfile"
)

// LabelsSuffix ends the name of a task's label file: DIR/<task>.labels.npy
// beside its inputs DIR/<task>.npy.
const LabelsSuffix = ".labels.npy"

// Task is one task's labelled evaluation data.
type Task struct {
	Name   string
	Inputs []float32 // N inputs, each of Shape, in C order
	Shape  []int64   // one input's shape, without the batch dimension
	Labels []int64   // N class indices
}

// N returns the number of samples.
func (t *Task) N() int { return len(t.Labels) }

// size returns the number of elements of one input.
func (t *Task) size() int {
	n := 1
	for _, d := range t.Shape {
		n *= int(d)
	}
	return n
}

// DiscoverTasks returns the tasks of dir, sorted: every <task>.npy that has
// a <task>.labels.npy beside it.
func DiscoverTasks(dir string) ([]string, error) {
	labels, err := filepath.Glob(filepath.Join(dir, "*"+LabelsSuffix))
	if err != nil {
		return nil, err
	}
	var tasks []string
	for _, l := range labels {
		t := strings.TrimSuffix(filepath.Base(l), LabelsSuffix)
		if _, err := os.Stat(filepath.Join(dir, t+".npy")); err == nil {
			tasks = append(tasks, t)
		}
	}
	if len(tasks) == 0 {
		return nil, fmt.Errorf("%s: no <task>.npy with <task>%s beside it", dir, LabelsSuffix)
	}
	slices.Sort(tasks)
	return tasks, nil
}

// LoadTask reads a task's inputs, DIR/<task>.npy (float32 or float64 in C
// order, samples along the first axis), and labels, DIR/<task>.labels.npy
// (a 1-D array of int64, int32 or uint8 class indices ≥ 0, one per sample).
func LoadTask(dir, name string) (*Task, error) {
	inPath := filepath.Join(dir, name+".npy")
	shape, inputs, err := readFloat32(inPath)
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", name, err)
	}
	if len(shape) < 2 {
		return nil, fmt.Errorf("task %s: %s: shape %v: want samples along the first axis, then one input's shape", name, inPath, shape)
	}
	lPath := filepath.Join(dir, name+LabelsSuffix)
	lshape, labels, err := readLabels(lPath)
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", name, err)
	}
	if len(lshape) != 1 || lshape[0] != shape[0] {
		return nil, fmt.Errorf("task %s: %s has shape %v: want (%d,), one label per input of %s", name, lPath, lshape, shape[0], inPath)
	}
	if shape[0] == 0 {
		return nil, fmt.Errorf("task %s: %s holds no samples", name, inPath)
	}
	t := &Task{Name: name, Inputs: inputs, Labels: labels}
	for _, d := range shape[1:] {
		t.Shape = append(t.Shape, int64(d))
	}
	return t, nil
}

// Subset returns a seeded random subset of at most limit samples, in their
// order in t: the same seed and N give the same samples on every machine
// (Go's PCG, as calibrate fit --limit). limit ≤ 0 or ≥ N returns t.
func (t *Task) Subset(limit int, seed uint64) *Task {
	if limit <= 0 || limit >= t.N() {
		return t
	}
	idx := SampleIndices(t.N(), limit, seed)
	size := t.size()
	s := &Task{Name: t.Name, Shape: t.Shape, Inputs: make([]float32, 0, limit*size), Labels: make([]int64, 0, limit)}
	for _, i := range idx {
		s.Inputs = append(s.Inputs, t.Inputs[i*size:(i+1)*size]...)
		s.Labels = append(s.Labels, t.Labels[i])
	}
	return s
}

// SampleIndices returns k of the indices 0..n−1 drawn at random with seed,
// ascending: never a prefix, so that a split stored in class order still
// gives a fair sample.
func SampleIndices(n, k int, seed uint64) []int {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	idx := rng.Perm(n)[:k]
	slices.Sort(idx)
	return idx
}

// readArray opens a .npy file and returns its header, its number of
// elements and its data reader.
func readArray(path string) (npyfile.Header, int, *bufio.Reader, func() error, error) {
	f, err := os.Open(path)
	if err != nil {
		return npyfile.Header{}, 0, nil, nil, err
	}
	r := bufio.NewReader(f)
	h, err := npyfile.ReadHeader(r)
	if err != nil {
		f.Close()
		return h, 0, nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if h.Fortran {
		f.Close()
		return h, 0, nil, nil, fmt.Errorf("%s: array is in Fortran order: save it in C order", path)
	}
	n, err := elements(h.Shape)
	if err != nil {
		f.Close()
		return h, 0, nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return h, n, r, f.Close, nil
}

// readWidened reads len(dst) little-endian elements of type S from r and
// stores them converted to D.
func readWidened[S int32 | uint8 | float64, D int64 | float32](r io.Reader, dst []D) error {
	v := make([]S, len(dst))
	if err := binary.Read(r, binary.LittleEndian, v); err != nil {
		return err
	}
	for i, x := range v {
		dst[i] = D(x)
	}
	return nil
}

func elements(shape []int) (int, error) {
	n := 1
	for _, d := range shape {
		if d < 0 || (d > 0 && n > math.MaxInt32/d) {
			return 0, fmt.Errorf("shape %v is too large", shape)
		}
		n *= d
	}
	return n, nil
}

// readFloat32 reads a float32 or float64 array as float32.
func readFloat32(path string) ([]int, []float32, error) {
	h, n, r, closeFn, err := readArray(path)
	if err != nil {
		return nil, nil, err
	}
	defer closeFn()
	out := make([]float32, n)
	switch h.Descr {
	case "<f4":
		err = binary.Read(r, binary.LittleEndian, out)
	case "<f8":
		err = readWidened[float64](r, out)
	default:
		return nil, nil, fmt.Errorf("%s: dtype %q: want float32 or float64 inputs", path, h.Descr)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s: reading %d elements of shape %v: %w", path, n, h.Shape, truncated(err))
	}
	return h.Shape, out, nil
}

// readLabels reads an int64, int32 or uint8 array of labels ≥ 0.
func readLabels(path string) ([]int, []int64, error) {
	h, n, r, closeFn, err := readArray(path)
	if err != nil {
		return nil, nil, err
	}
	defer closeFn()
	out := make([]int64, n)
	switch h.Descr {
	case "<i8":
		err = binary.Read(r, binary.LittleEndian, out)
	case "<i4":
		err = readWidened[int32](r, out)
	case "|u1":
		err = readWidened[uint8](r, out)
	default:
		return nil, nil, fmt.Errorf("%s: dtype %q: want int64, int32 or uint8 labels", path, h.Descr)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s: reading %d labels: %w", path, n, truncated(err))
	}
	for i, y := range out {
		if y < 0 {
			return nil, nil, fmt.Errorf("%s: label %d of sample %d: want a class index ≥ 0", path, y, i)
		}
	}
	return h.Shape, out, nil
}

func truncated(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return errors.New("file is truncated")
	}
	return err
}
