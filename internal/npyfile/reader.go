package npyfile

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// Reader streams the rows of a 2-D float32 or float64 array in C order.
type Reader struct {
	h       Header
	rows    int
	cols    int
	elem    int // bytes per element
	order   binary.ByteOrder
	f32     bool
	r       io.Reader
	closer  io.Closer
	next    int    // index of the next row to read
	scratch []byte // raw bytes of one chunk
}

// parseDescr returns the element size, byte order and name of a supported
// dtype descriptor.
func parseDescr(descr string) (elem int, order binary.ByteOrder, name string, err error) {
	if len(descr) == 3 {
		switch descr[0] {
		case '<':
			order = binary.LittleEndian
		case '>':
			order = binary.BigEndian
		}
		switch descr[1:] {
		case "f4":
			elem, name = 4, "float32"
		case "f8":
			elem, name = 8, "float64"
		}
	}
	if order == nil || elem == 0 {
		return 0, nil, "", fmt.Errorf("dtype %s is not supported: want float32 or float64", describeDescr(descr))
	}
	return elem, order, name, nil
}

// describeDescr names a numpy dtype descriptor for error messages.
func describeDescr(descr string) string {
	names := map[string]string{
		"b1": "bool", "i1": "int8", "u1": "uint8", "i2": "int16", "u2": "uint16",
		"i4": "int32", "u4": "uint32", "i8": "int64", "u8": "uint64",
		"f2": "float16", "f4": "float32", "f8": "float64", "f16": "float128",
		"c8": "complex64", "c16": "complex128",
	}
	if len(descr) > 1 {
		if n, ok := names[descr[1:]]; ok {
			return fmt.Sprintf("%s (%q)", n, descr)
		}
	}
	return fmt.Sprintf("%q", descr)
}

// NewReader reads the header of a .npy file from r and returns a reader of
// its rows. The array must be 2-D, C order, float32 or float64. If size ≥ 0
// it is the total size of the file, and a file whose data is shorter or
// longer than its header says is refused up front.
func NewReader(r io.Reader, size int64) (*Reader, error) {
	h, err := ReadHeader(r)
	if err != nil {
		return nil, err
	}
	elem, order, _, err := parseDescr(h.Descr)
	if err != nil {
		return nil, err
	}
	if len(h.Shape) != 2 {
		return nil, fmt.Errorf("array is %d-D with shape %v: want a 2-D N×D array, one sample per row", len(h.Shape), h.Shape)
	}
	if h.Fortran {
		return nil, errors.New("array is in Fortran (column-major) order: save it in C order, e.g. with numpy.ascontiguousarray")
	}
	rows, cols := h.Shape[0], h.Shape[1]
	if cols == 0 && rows != 0 {
		return nil, fmt.Errorf("array has shape %v: rows have no columns", h.Shape)
	}
	if cols > 0 && int64(rows) > math.MaxInt64/8/int64(cols) {
		return nil, fmt.Errorf("array shape %v is too large", h.Shape)
	}
	want := int64(rows) * int64(cols) * int64(elem)
	if size >= 0 {
		switch got := size - h.DataOffset; {
		case got < want:
			return nil, fmt.Errorf("file is truncated: shape %v of %s needs %d bytes of data, the file holds %d", h.Shape, describeDescr(h.Descr), want, got)
		case got > want:
			return nil, fmt.Errorf("file has %d trailing bytes after the %d bytes of data that shape %v of %s needs", got-want, want, h.Shape, describeDescr(h.Descr))
		}
	}
	rd := &Reader{h: h, rows: rows, cols: cols, elem: elem, order: order, f32: elem == 4, r: r}
	return rd, nil
}

// Open opens the named .npy file for reading its rows; see NewReader.
// Errors name the file.
func Open(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	r, err := NewReader(bufio.NewReaderSize(f, 1<<16), st.Size())
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r.closer = f
	return r, nil
}

// Header returns the file's header.
func (r *Reader) Header() Header { return r.h }

// Rows returns the number of rows, N.
func (r *Reader) Rows() int { return r.rows }

// Cols returns the number of columns, D.
func (r *Reader) Cols() int { return r.cols }

// DType returns "float32" or "float64".
func (r *Reader) DType() string {
	if r.f32 {
		return "float32"
	}
	return "float64"
}

// Remaining returns the number of rows not read yet.
func (r *Reader) Remaining() int { return r.rows - r.next }

// ReadRows reads up to len(dst)/Cols() rows into dst, row-major, widening
// float32 to float64, and returns the number of rows read. At the end of the
// array it returns 0 and io.EOF. A file that ends early gives
// io.ErrUnexpectedEOF.
func (r *Reader) ReadRows(dst []float64) (int, error) {
	if r.next >= r.rows {
		return 0, io.EOF
	}
	if r.cols == 0 {
		return 0, errors.New("ReadRows: array has no columns")
	}
	n := min(len(dst)/r.cols, r.rows-r.next)
	if n == 0 {
		return 0, errors.New("ReadRows: destination smaller than one row")
	}
	k := n * r.cols
	nb := k * r.elem
	if cap(r.scratch) < nb {
		r.scratch = make([]byte, nb)
	}
	b := r.scratch[:nb]
	if _, err := io.ReadFull(r.r, b); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, err
	}
	if r.f32 {
		for i := 0; i < k; i++ {
			dst[i] = float64(math.Float32frombits(r.order.Uint32(b[4*i:])))
		}
	} else {
		for i := 0; i < k; i++ {
			dst[i] = math.Float64frombits(r.order.Uint64(b[8*i:]))
		}
	}
	r.next += n
	return n, nil
}

// Close closes the underlying file, if the reader opened one.
func (r *Reader) Close() error {
	if r.closer != nil {
		return r.closer.Close()
	}
	return nil
}

// ReadFile reads the whole 2-D array in the named file as float64.
func ReadFile(path string) (rows, cols int, data []float64, err error) {
	r, err := Open(path)
	if err != nil {
		return 0, 0, nil, err
	}
	defer r.Close()
	data = make([]float64, r.Rows()*r.Cols())
	if r.Rows() > 0 {
		if _, err := r.ReadRows(data); err != nil {
			return 0, 0, nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return r.Rows(), r.Cols(), data, nil
}
