package safetensors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"unsafe"
)

// File is a whole safetensors file in memory: its header and its data
// section.
type File struct {
	Header
	// Data is the data section; each tensor's bytes are
	// Data[Offsets[0]:Offsets[1]].
	Data []byte
}

// Tensor is a named tensor with its raw little-endian, C-order bytes.
type Tensor struct {
	Name  string
	DType DType
	Shape []int
	Data  []byte
}

// Tensor returns the named tensor. Its Data aliases f.Data.
func (f *File) Tensor(name string) (Tensor, bool) {
	info, ok := f.Header.Tensor(name)
	if !ok {
		return Tensor{}, false
	}
	return Tensor{
		Name:  info.Name,
		DType: info.DType,
		Shape: info.Shape,
		Data:  f.Data[info.Offsets[0]:info.Offsets[1]:info.Offsets[1]],
	}, true
}

// Parse parses a whole safetensors file held in b. The returned File's Data
// aliases b.
func Parse(b []byte) (*File, error) {
	if len(b) < 8 {
		return nil, errors.New("safetensors: file is shorter than the 8-byte header length")
	}
	n, err := checkHeaderLength(b[:8], int64(len(b)))
	if err != nil {
		return nil, err
	}
	h, err := parseHeader(b[8 : 8+n])
	if err != nil {
		return nil, err
	}
	data := b[8+n:]
	if err := checkDataSize(h, int64(len(data))); err != nil {
		return nil, err
	}
	return &File{Header: *h, Data: data}, nil
}

func checkDataSize(h *Header, got int64) error {
	want := h.DataSize()
	switch {
	case got < want:
		return fmt.Errorf("safetensors: data section is truncated: the header describes %d bytes, the file holds %d", want, got)
	case got > want:
		return fmt.Errorf("safetensors: %d trailing bytes after the %d-byte data section the header describes", got-want, want)
	}
	return nil
}

// Read reads a whole safetensors file from r, which must end where the data
// section ends.
func Read(r io.Reader) (*File, error) {
	h, err := ReadHeader(r)
	if err != nil {
		return nil, err
	}
	want := h.DataSize()
	var buf bytes.Buffer
	got, err := io.Copy(&buf, io.LimitReader(r, want+1))
	if err != nil {
		return nil, fmt.Errorf("safetensors: reading data: %w", err)
	}
	if err := checkDataSize(h, got); err != nil {
		return nil, err
	}
	return &File{Header: *h, Data: buf.Bytes()}, nil
}

// ReadFile reads the named safetensors file.
func ReadFile(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(b)
}

// ReadFileHeader reads only the header of the named file, and checks it
// against the file's size, so a truncated file or one with trailing bytes is
// refused without reading its data.
func ReadFileHeader(path string) (*Header, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	var prefix [8]byte
	if size < 8 {
		return nil, errors.New("safetensors: file is shorter than the 8-byte header length")
	}
	if _, err := io.ReadFull(f, prefix[:]); err != nil {
		return nil, fmt.Errorf("safetensors: reading header length: %w", err)
	}
	n, err := checkHeaderLength(prefix[:], size)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(f, buf); err != nil {
		return nil, fmt.Errorf("safetensors: reading header: %w", err)
	}
	h, err := parseHeader(buf)
	if err != nil {
		return nil, err
	}
	if err := checkDataSize(h, size-8-n); err != nil {
		return nil, err
	}
	return h, nil
}

// Float64s decodes an F64 tensor's values.
func (t Tensor) Float64s() ([]float64, error) {
	if t.DType != F64 {
		return nil, fmt.Errorf("safetensors: tensor %q has dtype %s, want %s", t.Name, t.DType, F64)
	}
	if len(t.Data)%8 != 0 {
		return nil, fmt.Errorf("safetensors: tensor %q: %d bytes is not a whole number of F64 values", t.Name, len(t.Data))
	}
	v := make([]float64, len(t.Data)/8)
	for i := range v {
		v[i] = math.Float64frombits(binary.LittleEndian.Uint64(t.Data[8*i:]))
	}
	return v, nil
}

// Float64View returns an F64 tensor's values without copying them: a slice
// that aliases t.Data, which must then outlive it and not be modified. It
// reports false (and the caller should use Float64s) when the machine is not
// little-endian, the data are not 8-byte aligned, or the tensor is not F64
// or empty.
func (t Tensor) Float64View() ([]float64, bool) {
	if t.DType != F64 || len(t.Data) == 0 || len(t.Data)%8 != 0 || !littleEndian ||
		uintptr(unsafe.Pointer(unsafe.SliceData(t.Data)))%8 != 0 {
		return nil, false
	}
	return unsafe.Slice((*float64)(unsafe.Pointer(unsafe.SliceData(t.Data))), len(t.Data)/8), true
}

// littleEndian reports whether the machine stores numbers as the format
// does.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// Float64Tensor returns an F64 tensor holding values, which must have as
// many elements as shape describes.
func Float64Tensor(name string, shape []int, values []float64) Tensor {
	data := make([]byte, 8*len(values))
	for i, v := range values {
		binary.LittleEndian.PutUint64(data[8*i:], math.Float64bits(v))
	}
	return Tensor{Name: name, DType: F64, Shape: append([]int(nil), shape...), Data: data}
}
