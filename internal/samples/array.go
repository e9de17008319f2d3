package samples

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/mergectl/react-triton/internal/npyfile"
	"github.com/mergectl/react-triton/triton"
)

// datatypes maps a .npy dtype descriptor to the Triton datatype whose
// raw little-endian encoding its data already is. BYTES is "|S<n>" (fixed
// width byte strings), handled apart.
var datatypes = map[string]string{
	"<f4": triton.FP32, "<f2": triton.FP16, "<f8": triton.FP64,
	"|u1": triton.UINT8, "<u2": triton.UINT16, "<u4": triton.UINT32, "<u8": triton.UINT64,
	"|i1": triton.INT8, "<i2": triton.INT16, "<i4": triton.INT32, "<i8": triton.INT64,
	"|b1": triton.BOOL,
}

// NumpyNames names, for messages, the numpy dtype a Triton datatype is
// saved as.
var NumpyNames = map[string]string{
	triton.FP32: "numpy.float32", triton.FP16: "numpy.float16", triton.FP64: "numpy.float64",
	triton.BF16:  "numpy.float32 (sent as BF16)",
	triton.UINT8: "numpy.uint8", triton.UINT16: "numpy.uint16", triton.UINT32: "numpy.uint32", triton.UINT64: "numpy.uint64",
	triton.INT8: "numpy.int8", triton.INT16: "numpy.int16", triton.INT32: "numpy.int32", triton.INT64: "numpy.int64",
	triton.BOOL: "numpy.bool_", triton.BYTES: "bytes (numpy dtype S<n>)",
}

// Array is one array of samples in .npy form: the samples along the
// first axis, then one sample's shape, of any dtype Triton has a datatype
// for (datatypes, and byte strings as BYTES). It reads from r, where the
// .npy file starts at offset 0: a file, or an entry of an .npz archive.
type Array struct {
	path   string // for messages: the file, or "archive.npz:name"
	dt     string // the Triton datatype
	width  int    // BYTES: the bytes of one element (numpy's S<width>)
	shape  []int64
	elems  int   // elements of one sample
	sample int   // bytes of one sample in the file
	rows   int   // samples
	data   int64 // offset of the first sample
	r      io.ReaderAt
}

// NewArray reads the header of the .npy at r (size bytes) and checks it
// against the size, reading no data.
func NewArray(r io.ReaderAt, size int64, path string) (*Array, error) {
	h, err := npyfile.ReadHeader(bufio.NewReaderSize(io.NewSectionReader(r, 0, size), 1<<16))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	a := &Array{path: path, r: r, data: h.DataOffset}
	item := 0
	if dt, ok := datatypes[h.Descr]; ok {
		a.dt = dt
		item, _ = triton.ElementSize(dt)
	} else if w, ok := strings.CutPrefix(h.Descr, "|S"); ok {
		if n, err := strconv.Atoi(w); err == nil && n > 0 {
			a.dt, a.width, item = triton.BYTES, n, n
		}
	}
	if a.dt == "" {
		return nil, fmt.Errorf("%s: dtype %q has no Triton datatype: save it as one of float32, float16, float64, "+
			"(u)int8/16/32/64, bool or fixed-width bytes (S<n>), little-endian", path, h.Descr)
	}
	if h.Fortran {
		return nil, fmt.Errorf("%s: array is in Fortran (column-major) order: save it in C order, e.g. with numpy.ascontiguousarray", path)
	}
	if len(h.Shape) < 2 {
		return nil, fmt.Errorf("%s: array has shape %v: want N samples along the first axis, then one model input's shape", path, h.Shape)
	}
	a.rows, a.elems = h.Shape[0], 1
	for _, d := range h.Shape[1:] {
		if d <= 0 {
			return nil, fmt.Errorf("%s: array has shape %v: a sample has no elements", path, h.Shape)
		}
		if a.elems > math.MaxInt32/item/d {
			return nil, fmt.Errorf("%s: array has shape %v: a sample is too large", path, h.Shape)
		}
		a.elems *= d
		a.shape = append(a.shape, int64(d))
	}
	a.sample = a.elems * item
	if a.rows == 0 {
		return nil, fmt.Errorf("%s: array has no samples (shape %v)", path, h.Shape)
	}
	want := int64(a.rows) * int64(a.sample)
	switch got := size - h.DataOffset; {
	case got < want:
		return nil, fmt.Errorf("%s: file is truncated: shape %v of %s needs %d bytes of data, the file holds %d", path, h.Shape, h.Descr, want, got)
	case got > want:
		return nil, fmt.Errorf("%s: file has %d trailing bytes after the %d bytes of data that shape %v of %s needs", path, got-want, want, h.Shape, h.Descr)
	}
	return a, nil
}

// ReadRows returns the samples at rows (ascending file indices), in
// Triton's raw encoding of the array's datatype: the file's bytes, or for
// BYTES each element with its 4-byte length, its trailing NULs dropped as
// numpy drops them. Runs of consecutive rows are read at once.
func (a *Array) ReadRows(rows []int) ([]byte, error) {
	b := make([]byte, len(rows)*a.sample)
	for i := 0; i < len(rows); {
		j := i + 1
		for j < len(rows) && rows[j] == rows[j-1]+1 {
			j++
		}
		off := a.data + int64(rows[i])*int64(a.sample)
		if _, err := a.r.ReadAt(b[i*a.sample:j*a.sample], off); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, fmt.Errorf("reading %s: %w", a.path, err)
		}
		i = j
	}
	if a.dt != triton.BYTES {
		return b, nil
	}
	out := make([]byte, 0, len(b)+4*len(b)/a.width)
	for off := 0; off < len(b); off += a.width {
		e := b[off : off+a.width]
		for len(e) > 0 && e[len(e)-1] == 0 {
			e = e[:len(e)-1]
		}
		out = triton.AppendBytesElement(out, e)
	}
	return out, nil
}

// Datatype returns the array's Triton datatype.
func (a *Array) Datatype() string { return a.dt }

// Shape returns one sample's shape.
func (a *Array) Shape() []int64 { return a.shape }

// Rows returns the number of samples.
func (a *Array) Rows() int { return a.rows }

// Path names the array, for messages.
func (a *Array) Path() string { return a.path }
