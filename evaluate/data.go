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
	"github.com/mergectl/react-triton/internal/samples"
)

// LabelsSuffix ends the name of a task's label file: DIR/<task>.labels.npy
// beside its inputs DIR/<task>.npy (or DIR/<task>.npz).
const LabelsSuffix = ".labels.npy"

// Task is one task's labelled evaluation data.
type Task struct {
	Name string
	// Samples are the N inputs: a *samples.Set read from the task's file,
	// or features in memory (Floats).
	Samples Samples
	Labels  []int64 // N class indices
	closer  func() error
}

// N returns the number of samples.
func (t *Task) N() int { return len(t.Labels) }

// Close closes the task's input file, if it has one.
func (t *Task) Close() error {
	if t.closer == nil {
		return nil
	}
	return t.closer()
}

// DiscoverTasks returns the tasks of dir, sorted: every <task>.npy or
// <task>.npz that has a <task>.labels.npy beside it.
func DiscoverTasks(dir string) ([]string, error) {
	labels, err := filepath.Glob(filepath.Join(dir, "*"+LabelsSuffix))
	if err != nil {
		return nil, err
	}
	var tasks []string
	for _, l := range labels {
		t := strings.TrimSuffix(filepath.Base(l), LabelsSuffix)
		if _, err := inputPath(dir, t); err == nil {
			tasks = append(tasks, t)
		}
	}
	if len(tasks) == 0 {
		return nil, fmt.Errorf("%s: no <task>.npy (or .npz) with <task>%s beside it", dir, LabelsSuffix)
	}
	slices.Sort(tasks)
	return tasks, nil
}

// inputPath returns a task's input file: DIR/<task>.npy, or else
// DIR/<task>.npz; one of them, not both.
func inputPath(dir, name string) (string, error) {
	npy, npz := filepath.Join(dir, name+samples.NpySuffix), filepath.Join(dir, name+samples.NpzSuffix)
	_, errY := os.Stat(npy)
	_, errZ := os.Stat(npz)
	switch {
	case errY == nil && errZ == nil:
		return "", fmt.Errorf("both %s and %s: keep one", npy, npz)
	case errY == nil:
		return npy, nil
	case errZ == nil:
		return npz, nil
	}
	return "", fmt.Errorf("no inputs: neither %s nor %s", npy, npz)
}

// LoadTask opens a task's inputs, DIR/<task>.npy, or DIR/<task>.npz for
// models of several inputs (package samples: any dtype Triton has a
// datatype for, samples along the first axis), and reads its labels,
// DIR/<task>.labels.npy (a 1-D array of int64, int32 or uint8 class
// indices ≥ 0, one per sample). The inputs are read when sent; Close the
// task when done.
func LoadTask(dir, name string) (*Task, error) {
	inPath, err := inputPath(dir, name)
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", name, err)
	}
	set, err := samples.Open(inPath)
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", name, err)
	}
	lPath := filepath.Join(dir, name+LabelsSuffix)
	lshape, labels, err := readLabels(lPath)
	if err == nil && (len(lshape) != 1 || lshape[0] != set.Rows()) {
		err = fmt.Errorf("%s has shape %v: want (%d,), one label per input of %s", lPath, lshape, set.Rows(), inPath)
	}
	if err != nil {
		set.Close()
		return nil, fmt.Errorf("task %s: %w", name, err)
	}
	return &Task{Name: name, Samples: set, Labels: labels, closer: set.Close}, nil
}

// Subset returns a seeded random subset of at most limit samples, in their
// order in t: the same seed and N give the same samples on every machine
// (Go's PCG, as calibrate fit --limit). limit ≤ 0 or ≥ N returns t. The
// subset reads from t's file: close t, not it.
func (t *Task) Subset(limit int, seed uint64) *Task {
	if limit <= 0 || limit >= t.N() {
		return t
	}
	idx := SampleIndices(t.N(), limit, seed)
	s := &Task{Name: t.Name, Samples: &subset{Samples: t.Samples, rows: idx}, Labels: make([]int64, 0, limit)}
	for _, i := range idx {
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
func readWidened[S int32 | uint8, D int64](r io.Reader, dst []D) error {
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
