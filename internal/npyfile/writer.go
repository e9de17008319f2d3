package npyfile

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/mergectl/react-triton/internal/atomicfile"
)

// header returns the version 1.0 preamble and header of a C-order 2-D array,
// padded with spaces and a newline so that the data starts at a multiple of
// 64 bytes, as NumPy writes it.
func header(descr string, rows, cols int) []byte {
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%d, %d), }", descr, rows, cols)
	total := 10 + len(dict) + 1
	pad := (64 - total%64) % 64
	hdr := dict + strings.Repeat(" ", pad) + "\n"
	out := make([]byte, 10, 10+len(hdr))
	copy(out, magic)
	out[6], out[7] = 1, 0
	binary.LittleEndian.PutUint16(out[8:], uint16(len(hdr)))
	return append(out, hdr...)
}

// WriteFloat32 writes the row-major rows×cols array data as a float32 .npy.
func WriteFloat32(w io.Writer, rows, cols int, data []float32) error {
	if len(data) != rows*cols {
		return fmt.Errorf("npy: %d values for a %d×%d array", len(data), rows, cols)
	}
	b := header("<f4", rows, cols)
	buf := make([]byte, 4*len(data))
	for i, v := range data {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
	}
	if _, err := w.Write(b); err != nil {
		return err
	}
	_, err := w.Write(buf)
	return err
}

// WriteFloat64 writes the row-major rows×cols array data as a float64 .npy.
func WriteFloat64(w io.Writer, rows, cols int, data []float64) error {
	if len(data) != rows*cols {
		return fmt.Errorf("npy: %d values for a %d×%d array", len(data), rows, cols)
	}
	b := header("<f8", rows, cols)
	buf := make([]byte, 8*len(data))
	for i, v := range data {
		binary.LittleEndian.PutUint64(buf[8*i:], math.Float64bits(v))
	}
	if _, err := w.Write(b); err != nil {
		return err
	}
	_, err := w.Write(buf)
	return err
}

// WriteFileFloat32 writes a float32 .npy file atomically (temporary file,
// fsync, rename, directory fsync).
func WriteFileFloat32(path string, rows, cols int, data []float32) error {
	return atomicfile.Write(path, 0o644, func(w io.Writer) error {
		return WriteFloat32(w, rows, cols, data)
	})
}

// WriteFileFloat64 writes a float64 .npy file atomically.
func WriteFileFloat64(path string, rows, cols int, data []float64) error {
	return atomicfile.Write(path, 0o644, func(w io.Writer) error {
		return WriteFloat64(w, rows, cols, data)
	})
}
