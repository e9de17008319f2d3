package samples

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mergectl/react-triton/triton"
)

// npyBytes is a .npy file of the given header dictionary and data.
func npyBytes(dict string, data []byte) []byte {
	hdr := dict + "\n"
	b := append([]byte("\x93NUMPY\x01\x00"), byte(len(hdr)), byte(len(hdr)>>8))
	return append(append(b, hdr...), data...)
}

// TestNpyArrayBytes: fixed-width byte strings (numpy's S<n>) become BYTES
// elements, each with its length, trailing NULs dropped as numpy drops
// them, and rows are read in any ascending selection.
func TestNpyArrayBytes(t *testing.T) {
	data := []byte("cat\x00\x00" + "zebra" + "\x00\x00\x00\x00\x00")
	b := npyBytes("{'descr': '|S5', 'fortran_order': False, 'shape': (3, 1), }", data)
	a, err := NewArray(bytes.NewReader(b), int64(len(b)), "words.npy")
	if err != nil {
		t.Fatal(err)
	}
	if a.dt != triton.BYTES || a.rows != 3 {
		t.Fatalf("dt %s, rows %d", a.dt, a.rows)
	}
	raw, err := a.ReadRows([]int{0, 2})
	if err != nil {
		t.Fatal(err)
	}
	got, err := triton.SplitBytes(raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || string(got[0]) != "cat" || string(got[1]) != "" {
		t.Errorf("elements %q, want [cat, \"\"]", got)
	}
	if _, err := NewArray(bytes.NewReader(b[:len(b)-1]), int64(len(b)-1), "short.npy"); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("a truncated file: %v", err)
	}
	c := npyBytes("{'descr': '<c8', 'fortran_order': False, 'shape': (1, 1), }", make([]byte, 8))
	if _, err := NewArray(bytes.NewReader(c), int64(len(c)), "complex.npy"); err == nil || !strings.Contains(err.Error(), "has no Triton datatype") {
		t.Errorf("complex numbers: %v", err)
	}
}
