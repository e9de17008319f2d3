package samples

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// File name suffixes of a task's samples: DIR/<task>.npy for a model of
// one input, DIR/<task>.npz for a model of several, one array per input,
// named as the input (numpy.savez(path, input_ids=..., attention_mask=...)).
const (
	NpySuffix = ".npy"
	NpzSuffix = ".npz"
)

// Set is a task's samples: one array (a .npy file, for a model's only
// input) or several (an .npz archive, one per model input), with the same
// number of samples each.
type Set struct {
	path   string
	arrays []*Array
	names  []string // the model input of each array; "" for a .npy
	closer io.Closer
}

// Open opens a task's samples, a .npy file or an .npz archive (by its
// suffix), and checks every array's header and size.
func Open(path string) (*Set, error) {
	if strings.HasSuffix(path, NpzSuffix) {
		return OpenArchive(path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil {
		var a *Array
		if a, err = NewArray(f, st.Size(), path); err == nil {
			return &Set{path: path, arrays: []*Array{a}, names: []string{""}, closer: f}, nil
		}
	}
	f.Close()
	return nil, err
}

// Path returns the file's path.
func (s *Set) Path() string { return s.path }

// Rows returns the number of samples.
func (s *Set) Rows() int { return s.arrays[0].rows }

// Specs describes the tensors of a sample, in the order Read returns them.
func (s *Set) Specs() []Spec {
	specs := make([]Spec, len(s.arrays))
	for i, a := range s.arrays {
		specs[i] = Spec{Name: s.names[i], Datatype: a.dt, Shape: a.shape}
	}
	return specs
}

// Describe says what the file holds: "DIR/a.npz, "ids": 100×3 samples of
// INT64; "mask": 100×3 samples of UINT8".
func (s *Set) Describe() string {
	parts := make([]string, len(s.arrays))
	for i, a := range s.arrays {
		parts[i] = fmt.Sprintf("%s samples of %s", formatShape(a.rows, a.shape), a.dt)
		if s.names[i] != "" {
			parts[i] = fmt.Sprintf("%q: %s", s.names[i], parts[i])
		}
	}
	return fmt.Sprintf("%s, %s", s.path, strings.Join(parts, "; "))
}

// Read returns the samples at rows (ascending indices), each tensor's in
// Triton's raw encoding, in the order of Specs.
func (s *Set) Read(rows []int) ([][]byte, error) {
	raw := make([][]byte, len(s.arrays))
	for i, a := range s.arrays {
		b, err := a.ReadRows(rows)
		if err != nil {
			return nil, err
		}
		raw[i] = b
	}
	return raw, nil
}

// Close closes the file.
func (s *Set) Close() error { return s.closer.Close() }

// formatShape formats the shape of n samples of the given shape,
// "N×1×28×28".
func formatShape(n int, shape []int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d", n)
	for _, d := range shape {
		fmt.Fprintf(&b, "×%d", d)
	}
	return b.String()
}
