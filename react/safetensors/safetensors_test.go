package safetensors

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// rawFile assembles a file from a literal header and data section.
func rawFile(header string, data []byte) []byte {
	b := make([]byte, 8, 8+len(header)+len(data))
	binary.LittleEndian.PutUint64(b, uint64(len(header)))
	b = append(b, header...)
	return append(b, data...)
}

func TestRoundTrip(t *testing.T) {
	tensors := []Tensor{
		Float64Tensor("a.S", []int{2, 3}, []float64{1, 2, 3, 4, 5, -6.5}),
		{Name: "bytes", DType: U8, Shape: []int{3}, Data: []byte{7, 8, 9}},
		{Name: "empty", DType: F32, Shape: []int{0, 4}, Data: nil},
		{Name: "scalar", DType: I32, Shape: []int{}, Data: []byte{1, 0, 0, 0}},
	}
	md := map[string]string{"format": "x", "quote\"": "é\n"}
	b, err := Marshal(tensors, md)
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(b)
	if (8+n)%8 != 0 {
		t.Errorf("data section starts at %d, want a multiple of 8", 8+n)
	}
	if hdr := string(b[8 : 8+n]); strings.TrimRight(hdr, " ") != strings.TrimSpace(hdr) {
		t.Errorf("header padding is not trailing spaces: %q", hdr)
	}
	for name, read := range map[string]func() (*File, error){
		"Parse": func() (*File, error) { return Parse(b) },
		"Read":  func() (*File, error) { return Read(bytes.NewReader(b)) },
	} {
		f, err := read()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(f.Metadata, md) {
			t.Errorf("%s: metadata = %v, want %v", name, f.Metadata, md)
		}
		if len(f.Tensors) != len(tensors) {
			t.Fatalf("%s: %d tensors, want %d", name, len(f.Tensors), len(tensors))
		}
		for _, want := range tensors {
			got, ok := f.Tensor(want.Name)
			if !ok {
				t.Fatalf("%s: tensor %q missing", name, want.Name)
			}
			if got.DType != want.DType || !reflect.DeepEqual(got.Shape, want.Shape) || !bytes.Equal(got.Data, want.Data) {
				t.Errorf("%s: tensor %q = %+v, want %+v", name, want.Name, got, want)
			}
		}
	}
	f, _ := Parse(b)
	s, _ := f.Tensor("a.S")
	v, err := s.Float64s()
	if err != nil || !reflect.DeepEqual(v, []float64{1, 2, 3, 4, 5, -6.5}) {
		t.Errorf("Float64s = %v, %v", v, err)
	}
	if _, err := (Tensor{Name: "u", DType: U8, Data: []byte{1}}).Float64s(); err == nil {
		t.Error("Float64s of a U8 tensor: no error")
	}
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.safetensors")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	tensors := []Tensor{Float64Tensor("w", []int{2}, []float64{1, 2})}
	if err := WriteFile(path, tensors, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	f, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if f.Metadata != nil || len(f.Tensors) != 1 {
		t.Errorf("read back %+v", f.Header)
	}
	h, err := ReadFileHeader(path)
	if err != nil || h.DataSize() != 16 {
		t.Errorf("ReadFileHeader = %+v, %v", h, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries after WriteFile, want 1 (no temporary files left)", len(entries))
	}
	// A failed write leaves the destination untouched.
	bad := []Tensor{{Name: "w", DType: F64, Shape: []int{3}, Data: make([]byte, 8)}}
	if err := WriteFile(path, bad, nil, 0o640); err == nil {
		t.Error("WriteFile with a bad tensor: no error")
	}
	if _, err := ReadFile(path); err != nil {
		t.Errorf("destination damaged by a failed write: %v", err)
	}
}

func TestWriteRefuses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tensors []Tensor
		want    string
	}{
		{"duplicate", []Tensor{Float64Tensor("a", []int{1}, []float64{1}), Float64Tensor("a", []int{1}, []float64{1})}, "duplicate tensor name"},
		{"reserved name", []Tensor{Float64Tensor("__metadata__", []int{1}, []float64{1})}, "invalid tensor name"},
		{"empty name", []Tensor{Float64Tensor("", []int{1}, []float64{1})}, "invalid tensor name"},
		{"dtype", []Tensor{{Name: "a", DType: "F128", Shape: []int{1}, Data: make([]byte, 16)}}, "unknown dtype"},
		{"size", []Tensor{{Name: "a", DType: F64, Shape: []int{2}, Data: make([]byte, 8)}}, "needs 16 bytes, have 8"},
		{"negative", []Tensor{{Name: "a", DType: F64, Shape: []int{-1}}}, "negative dimension"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Marshal(tc.tensors, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Marshal: error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestReadRefuses(t *testing.T) {
	f64 := func(n int) []byte { return make([]byte, 8*n) }
	hugeLen := make([]byte, 16)
	binary.LittleEndian.PutUint64(hugeLen, 200_000_000)
	longLen := make([]byte, 16)
	binary.LittleEndian.PutUint64(longLen, 100)
	for _, tc := range []struct {
		name string
		file []byte
		want string
	}{
		{"empty", nil, "shorter than the 8-byte header length"},
		{"short", []byte{1, 2, 3}, "shorter than the 8-byte header length"},
		{"length beyond file", longLen, "header length 100 is larger than the rest of the file"},
		{"length beyond cap", append(hugeLen, make([]byte, 8)...), "header length 200000000"},
		{"not JSON", rawFile("{nope}  ", nil), "invalid header"},
		{"not an object", rawFile("[1, 2]  ", nil), "want a JSON object"},
		{"trailing JSON", rawFile("{} {}   ", nil), "data after the JSON object"},
		{"invalid UTF-8", rawFile("{\"\xff\":1}", nil), "not valid UTF-8"},
		{"unknown dtype", rawFile(`{"a":{"dtype":"F128","shape":[1],"data_offsets":[0,16]}}`, make([]byte, 16)), `unknown dtype "F128"`},
		{"shape mismatch", rawFile(`{"a":{"dtype":"F64","shape":[3],"data_offsets":[0,16]}}`, f64(2)), "needs 24 bytes"},
		{"reversed offsets", rawFile(`{"a":{"dtype":"F64","shape":[0],"data_offsets":[8,0]}}`, f64(1)), "end before they begin"},
		{"overlap", rawFile(`{"a":{"dtype":"F64","shape":[2],"data_offsets":[0,16]},"b":{"dtype":"F64","shape":[1],"data_offsets":[8,16]}}`, f64(2)), "overlap"},
		{"gap", rawFile(`{"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]},"b":{"dtype":"F64","shape":[1],"data_offsets":[16,24]}}`, f64(3)), "gap of 8 bytes"},
		{"leading gap", rawFile(`{"a":{"dtype":"F64","shape":[1],"data_offsets":[8,16]}}`, f64(2)), "gap"},
		{"truncated data", rawFile(`{"a":{"dtype":"F64","shape":[2],"data_offsets":[0,16]}}`, f64(1)), "truncated"},
		{"trailing data", rawFile(`{"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}}`, f64(2)), "trailing bytes"},
		{"duplicate tensor", rawFile(`{"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]},"a":{"dtype":"F64","shape":[1],"data_offsets":[8,16]}}`, f64(2)), `duplicate name "a"`},
		{"duplicate field", rawFile(`{"a":{"dtype":"F64","dtype":"F32","shape":[1],"data_offsets":[0,8]}}`, f64(1)), `duplicate name "dtype"`},
		{"duplicate metadata", rawFile(`{"__metadata__":{"k":"1","k":"2"}}`, nil), `duplicate name "k"`},
		{"metadata not string", rawFile(`{"__metadata__":{"k":1}}`, nil), `value of "k" is 1, want a string`},
		{"unknown field", rawFile(`{"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8],"x":1}}`, f64(1)), `unknown field "x"`},
		{"missing offsets", rawFile(`{"a":{"dtype":"F64","shape":[1]}}`, f64(1)), "missing data_offsets"},
		{"missing dtype", rawFile(`{"a":{"shape":[1],"data_offsets":[0,8]}}`, f64(1)), "missing dtype"},
		{"missing shape", rawFile(`{"a":{"dtype":"F64","data_offsets":[0,8]}}`, f64(1)), "missing shape"},
		{"negative dim", rawFile(`{"a":{"dtype":"F64","shape":[-1],"data_offsets":[0,8]}}`, f64(1)), "not a non-negative integer"},
		{"fractional dim", rawFile(`{"a":{"dtype":"F64","shape":[1.5],"data_offsets":[0,8]}}`, f64(1)), "not a non-negative integer"},
		{"null shape", rawFile(`{"a":{"dtype":"F64","shape":null,"data_offsets":[0,8]}}`, f64(1)), "found null"},
		{"three offsets", rawFile(`{"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8,9]}}`, f64(1)), "has 3 numbers"},
		{"huge shape", rawFile(`{"a":{"dtype":"F64","shape":[2147483647,2147483647,2147483647],"data_offsets":[0,8]}}`, f64(1)), "too large"},
		{"dtype not string", rawFile(`{"a":{"dtype":8,"shape":[1],"data_offsets":[0,8]}}`, f64(1)), "dtype is 8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for name, read := range map[string]func() error{
				"Parse": func() error { _, err := Parse(tc.file); return err },
				"Read":  func() error { _, err := Read(bytes.NewReader(tc.file)); return err },
				"ReadFile": func() error {
					path := filepath.Join(t.TempDir(), "f.safetensors")
					if err := os.WriteFile(path, tc.file, 0o644); err != nil {
						t.Fatal(err)
					}
					_, err := ReadFile(path)
					return err
				},
			} {
				err := read()
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s: error %v, want one containing %q", name, err, tc.want)
				}
			}
		})
	}
}

func TestReadFileHeaderRefusesTruncation(t *testing.T) {
	b, err := Marshal([]Tensor{Float64Tensor("a", []int{4}, []float64{1, 2, 3, 4})}, nil)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "f.safetensors")
	for _, tc := range []struct {
		file []byte
		want string
	}{
		{b[:len(b)-1], "truncated"},
		{append(append([]byte(nil), b...), 0), "trailing bytes"},
	} {
		if err := os.WriteFile(path, tc.file, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadFileHeader(path); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ReadFileHeader: error %v, want one containing %q", err, tc.want)
		}
	}
}

// TestFloat64View: an aligned F64 tensor is viewed in place, with the
// values Float64s decodes; a misaligned one is not.
func TestFloat64View(t *testing.T) {
	values := []float64{1.5, -2, math.Pi, math.Inf(1), 0}
	tt := Float64Tensor("x", []int{5}, values)
	v, ok := tt.Float64View()
	if !ok {
		t.Fatal("an 8-byte aligned F64 tensor is not viewed")
	}
	for i, want := range values {
		if v[i] != want {
			t.Errorf("view[%d] = %v, want %v", i, v[i], want)
		}
	}
	tt.Data[0] ^= 1 // the view aliases the data
	if v[0] == 1.5 {
		t.Error("the view does not alias the tensor's data")
	}
	buf := make([]byte, len(tt.Data)+1)
	copy(buf[1:], tt.Data)
	shifted := Tensor{Name: "y", DType: F64, Shape: []int{5}, Data: buf[1:]}
	if _, ok := shifted.Float64View(); ok {
		t.Error("a misaligned tensor is viewed")
	}
	if got, err := shifted.Float64s(); err != nil || got[1] != -2 {
		t.Errorf("Float64s of the misaligned tensor = %v, %v", got, err)
	}
}
