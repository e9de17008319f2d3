package calibrate

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/mergectl/react-triton/internal/npyfile"
)

// InputSuffix is the file name suffix of a task's calibration inputs for a
// Triton-backed fit: DIR/<task>.npy.
const InputSuffix = ".npy"

// inputFile streams the samples of a task's calibration inputs: a float32
// .npy array in C order whose first axis is the samples and whose other axes
// are the shape of one model input without the batch dimension.
type inputFile struct {
	path   string
	shape  []int64 // one sample's shape
	rows   int     // number of samples
	sample int     // bytes of one sample
	f      *os.File
	r      io.Reader
	next   int
}

// openInput opens path and checks its header and size, reading no data.
func openInput(path string) (*inputFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	in, err := newInputFile(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	return in, nil
}

func newInputFile(f *os.File, path string) (*inputFile, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(f, 1<<16)
	h, err := npyfile.ReadHeader(br)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if h.Descr != "<f4" {
		return nil, fmt.Errorf("%s: dtype %q: want little-endian float32 (\"<f4\"), e.g. x.astype(numpy.float32)", path, h.Descr)
	}
	if h.Fortran {
		return nil, fmt.Errorf("%s: array is in Fortran (column-major) order: save it in C order, e.g. with numpy.ascontiguousarray", path)
	}
	if len(h.Shape) < 2 {
		return nil, fmt.Errorf("%s: array has shape %v: want N samples along the first axis, then one model input's shape", path, h.Shape)
	}
	in := &inputFile{path: path, rows: h.Shape[0], f: f, r: br, sample: 4}
	for _, d := range h.Shape[1:] {
		if d <= 0 {
			return nil, fmt.Errorf("%s: array has shape %v: a sample has no elements", path, h.Shape)
		}
		if in.sample > math.MaxInt32/d {
			return nil, fmt.Errorf("%s: array has shape %v: a sample is too large", path, h.Shape)
		}
		in.sample *= d
		in.shape = append(in.shape, int64(d))
	}
	if in.rows == 0 {
		return nil, fmt.Errorf("%s: array has no samples (shape %v)", path, h.Shape)
	}
	want := int64(in.rows) * int64(in.sample)
	switch got := st.Size() - h.DataOffset; {
	case got < want:
		return nil, fmt.Errorf("%s: file is truncated: shape %v of float32 needs %d bytes of data, the file holds %d", path, h.Shape, want, got)
	case got > want:
		return nil, fmt.Errorf("%s: file has %d trailing bytes after the %d bytes of data that shape %v of float32 needs", path, got-want, want, h.Shape)
	}
	return in, nil
}

// formatShape formats the shape of an input file, "N×1×28×28".
func (in *inputFile) formatShape() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d", in.rows)
	for _, d := range in.shape {
		fmt.Fprintf(&b, "×%d", d)
	}
	return b.String()
}

// read returns the raw little-endian float32 bytes of up to n further
// samples and how many it read; 0 and io.EOF at the end.
func (in *inputFile) read(n int) ([]byte, int, error) {
	n = min(n, in.rows-in.next)
	if n <= 0 {
		return nil, 0, io.EOF
	}
	b := make([]byte, n*in.sample)
	if _, err := io.ReadFull(in.r, b); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, 0, fmt.Errorf("reading %s: %w", in.path, err)
	}
	in.next += n
	return b, n, nil
}

// float32s decodes raw little-endian float32 bytes.
func float32s(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

func (in *inputFile) Close() error { return in.f.Close() }
