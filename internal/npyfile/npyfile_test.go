package npyfile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sbinet/npyio/npy"
	"gonum.org/v1/gonum/mat"
)

// write stores val with sbinet/npyio, an independent implementation.
func write(t *testing.T, val any) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "a.npy")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := npy.Write(f, val); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReadsNpyio(t *testing.T) {
	for _, tc := range []struct {
		name  string
		val   any
		dtype string
	}{
		{"float32", [2][3]float32{{1, 2, 3}, {4, 5, 6.5}}, "float32"},
		{"float64", mat.NewDense(2, 3, []float64{1, 2, 3, 4, 5, 6.5}), "float64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Open(write(t, tc.val))
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if r.Rows() != 2 || r.Cols() != 3 || r.DType() != tc.dtype {
				t.Fatalf("got %d×%d %s", r.Rows(), r.Cols(), r.DType())
			}
			// Read one row at a time to exercise chunking.
			var all []float64
			row := make([]float64, 3)
			for {
				n, err := r.ReadRows(row)
				if err == io.EOF {
					break
				}
				if err != nil || n != 1 {
					t.Fatalf("ReadRows = %d, %v", n, err)
				}
				all = append(all, row...)
			}
			if want := []float64{1, 2, 3, 4, 5, 6.5}; !reflect.DeepEqual(all, want) {
				t.Errorf("data = %v, want %v", all, want)
			}
		})
	}
}

func TestRoundTrip(t *testing.T) {
	var b32, b64 bytes.Buffer
	if err := WriteFloat32(&b32, 2, 2, []float32{1, -2, 3.25, 4}); err != nil {
		t.Fatal(err)
	}
	if err := WriteFloat64(&b64, 2, 2, []float64{1, -2, 3.25, 4}); err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{b32.Bytes(), b64.Bytes()} {
		r, err := NewReader(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatal(err)
		}
		if r.Header().DataOffset%64 != 0 {
			t.Errorf("data offset %d is not 64-byte aligned", r.Header().DataOffset)
		}
		got := make([]float64, 4)
		if n, err := r.ReadRows(got); n != 2 || err != nil || !reflect.DeepEqual(got, []float64{1, -2, 3.25, 4}) {
			t.Errorf("ReadRows = %d, %v, %v", n, err, got)
		}
	}
	// npyio reads what we write.
	var m []float32
	if err := npy.Read(bytes.NewReader(b32.Bytes()), &m); err != nil || !reflect.DeepEqual(m, []float32{1, -2, 3.25, 4}) {
		t.Errorf("npyio read %v, %v", m, err)
	}
	path := filepath.Join(t.TempDir(), "w.npy")
	if err := WriteFileFloat32(path, 2, 2, []float32{1, -2, 3.25, 4}); err != nil {
		t.Fatal(err)
	}
	if rows, cols, data, err := ReadFile(path); err != nil || rows != 2 || cols != 2 || data[2] != 3.25 {
		t.Errorf("ReadFile = %d, %d, %v, %v", rows, cols, data, err)
	}
}

func rawNpy(dict string, data []byte) []byte {
	b := []byte(magic + "\x01\x00")
	b = append(b, byte(len(dict)), byte(len(dict)>>8))
	return append(append(b, dict...), data...)
}

func TestRefuses(t *testing.T) {
	good32 := func(n int) []byte { return make([]byte, 4*n) }
	for _, tc := range []struct {
		name string
		file []byte
		want string
	}{
		{"empty", nil, "shorter than the 10-byte preamble"},
		{"no magic", []byte("hello world, not npy"), "magic"},
		{"int32", rawNpy("{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }\n", good32(4)), "dtype int32 (\"<i4\") is not supported: want float32 or float64"},
		{"float16", rawNpy("{'descr': '<f2', 'fortran_order': False, 'shape': (2, 2), }\n", good32(2)), "float16"},
		{"1-D", rawNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }\n", good32(4)), "array is 1-D with shape [4]"},
		{"3-D", rawNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2, 2), }\n", good32(4)), "3-D"},
		{"fortran", rawNpy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }\n", good32(4)), "Fortran"},
		{"truncated", rawNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }\n", good32(3)), "file is truncated"},
		{"trailing", rawNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }\n", good32(5)), "trailing bytes"},
		{"structured", rawNpy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }\n", good32(2)), "structured"},
		{"missing shape", rawNpy("{'descr': '<f4', 'fortran_order': False}\n", nil), `missing key "shape"`},
		{"bad shape", rawNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -1), }\n", nil), "shape"},
		{"truncated header", rawNpy("{'descr'", nil)[:12], "truncated .npy header"},
		{"version 9", []byte(magic + "\x09\x00\x00\x00"), "format version 9.0"},
		{"huge shape", rawNpy("{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776, 1099511627776), }\n", nil),
			"shape: [1099511627776 1099511627776] describes more than 2^59 elements (the product of the dimensions overflows)"},
		{"product overflows int64", rawNpy("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4), }\n", nil),
			"the product of the dimensions overflows"},
		{"product overflows uint64", rawNpy("{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776, 1099511627776, 1099511627776), }\n", nil),
			"the product of the dimensions overflows"},
		{"zero after a huge partial product", rawNpy("{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776, 16777216, 0), }\n", nil),
			"array is 3-D"},
		{"dimension beyond int", rawNpy("{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999999, 2), }\n", nil),
			"shape: dimension 99999999999999999999999 is too large (at most 1099511627776)"},
		{"dimension beyond limit", rawNpy("{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627777, 2), }\n", nil),
			"dimension 1099511627777 is too large"},
		{"not a dimension", rawNpy("{'descr': '<f8', 'fortran_order': False, 'shape': (2, x), }\n", nil), "want non-negative integer dimensions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewReader(bytes.NewReader(tc.file), int64(len(tc.file)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	// Open names the file.
	path := filepath.Join(t.TempDir(), "x.npy")
	if err := os.WriteFile(path, []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path); err == nil || !strings.HasPrefix(err.Error(), path+": ") {
		t.Errorf("Open error %v does not name the file", err)
	}
}

// FuzzReadHeader feeds arbitrary bytes to NewReader with the file's size:
// what it accepts must hold exactly the data its header declares, and
// reading it must give every row, the values the bytes at the end of the
// file hold (decoded here on their own), and then io.EOF.
func FuzzReadHeader(f *testing.F) {
	f.Add(rawNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }\n", make([]byte, 16)))
	f.Add(rawNpy("{'descr': '>f8', 'fortran_order': False, 'shape': (1, 3), }\n", make([]byte, 24)))
	f.Add(rawNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 5), }\n", nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := NewReader(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		rows, cols := r.Rows(), r.Cols()
		elem, order := 8, binary.ByteOrder(binary.LittleEndian)
		if r.DType() == "float32" {
			elem = 4
		}
		if strings.HasPrefix(r.Header().Descr, ">") {
			order = binary.BigEndian
		}
		if rows < 0 || cols < 0 || (rows > 0 && cols == 0) {
			t.Fatalf("accepted shape %d×%d", rows, cols)
		}
		size := int64(rows) * int64(cols) * int64(elem)
		if r.Header().DataOffset+size != int64(len(b)) {
			t.Fatalf("accepted %d bytes whose header (data at %d) declares %d×%d %s: %d bytes of data",
				len(b), r.Header().DataOffset, rows, cols, r.DType(), size)
		}
		data := b[r.Header().DataOffset:]
		dst := make([]float64, 3*max(1, cols))
		read := 0
		for {
			n, err := r.ReadRows(dst)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("row %d of %d: %v", read, rows, err)
			}
			for i := range n * cols {
				off := (read*cols + i) * elem
				var want float64
				if elem == 4 {
					want = float64(math.Float32frombits(order.Uint32(data[off:])))
				} else {
					want = math.Float64frombits(order.Uint64(data[off:]))
				}
				if got := dst[i]; got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
					t.Fatalf("row %d column %d: %v, the bytes hold %v", read+i/cols, i%cols, got, want)
				}
			}
			read += n
		}
		if read != rows {
			t.Fatalf("read %d rows of %d before io.EOF", read, rows)
		}
	})
}
