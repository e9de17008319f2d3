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

// sampleInput streams the samples of one task's calibration inputs as the
// raw contents of the models' input tensor: little-endian float32 from a
// .npy file (inputFile) or a folder of images decoded here (imageInput), or
// the files of a folder of images as they are, BYTES (encodedInput).
type sampleInput interface {
	// source names the file or folder, for messages.
	source() string
	// sampleShape is the shape of one sample, without the batch dimension.
	sampleShape() []int64
	// describe says what the input holds and, for images, how they become
	// samples: part of a checkpoint's description of its run.
	describe() string
	// use restricts the samples read to idx, ascending indices of the
	// input's samples (nil: all of them), and starts reading at position
	// skip among them.
	use(idx []int, skip int)
	// count returns the number of samples used.
	count() int
	// read returns up to n further samples; io.EOF at the end.
	read(n int) (chunk, error)
	Close() error
}

// chunk is the samples of one request.
type chunk struct {
	raw []byte // the input tensor's raw contents
	n   int    // the number of samples
	// files are the samples' image files, relative to the folder, when
	// they are sent encoded (encodedInput): to name a file Triton refuses.
	files []string
}

// inputFile streams the samples of a task's calibration inputs: a float32
// .npy array in C order whose first axis is the samples and whose other axes
// are the shape of one model input without the batch dimension.
type inputFile struct {
	path   string
	shape  []int64 // one sample's shape
	rows   int     // number of samples in the file
	sample int     // bytes of one sample
	f      *os.File
	data   int64 // offset of the first sample in the file
	idx    []int // the samples used, ascending; nil: all of them
	next   int   // position of the next sample to read among those used
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
	h, err := npyfile.ReadHeader(bufio.NewReaderSize(f, 1<<16))
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
	in := &inputFile{path: path, rows: h.Shape[0], f: f, data: h.DataOffset, sample: 4}
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

func (in *inputFile) source() string { return in.path }

func (in *inputFile) sampleShape() []int64 { return in.shape }

func (in *inputFile) describe() string {
	return fmt.Sprintf("%s, %s samples", in.path, formatShape(in.rows, in.shape))
}

func (in *inputFile) use(idx []int, skip int) {
	in.idx, in.next = idx, skip
}

func (in *inputFile) count() int {
	if in.idx != nil {
		return len(in.idx)
	}
	return in.rows
}

// row returns the index in the file of the sample at position i among
// those used.
func (in *inputFile) row(i int) int {
	if in.idx != nil {
		return in.idx[i]
	}
	return i
}

// read returns the raw little-endian float32 bytes of up to n further
// samples; io.EOF at the end. Runs of consecutive samples are read at once.
func (in *inputFile) read(n int) (chunk, error) {
	n = min(n, in.count()-in.next)
	if n <= 0 {
		return chunk{}, io.EOF
	}
	b := make([]byte, n*in.sample)
	for i := 0; i < n; {
		j := i + 1
		for j < n && in.row(in.next+j) == in.row(in.next+j-1)+1 {
			j++
		}
		off := in.data + int64(in.row(in.next+i))*int64(in.sample)
		if _, err := in.f.ReadAt(b[i*in.sample:j*in.sample], off); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return chunk{}, fmt.Errorf("reading %s: %w", in.path, err)
		}
		i = j
	}
	in.next += n
	return chunk{raw: b, n: n}, nil
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
