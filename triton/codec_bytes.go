package triton

import (
	"encoding/binary"
	"fmt"
	"math"
)

// NewBytes returns a BYTES tensor holding v, each element prefixed with its
// length as a 4-byte little-endian integer.
func NewBytes(name string, shape []int64, v [][]byte) Tensor {
	n := 0
	for _, b := range v {
		n += 4 + len(b)
	}
	raw := make([]byte, 0, n)
	for _, b := range v {
		raw = AppendBytesElement(raw, b)
	}
	return Tensor{Name: name, Datatype: BYTES, Shape: cloneShape(shape), Raw: raw}
}

// NewStrings returns a BYTES tensor holding the strings in v.
func NewStrings(name string, shape []int64, v []string) Tensor {
	b := make([][]byte, len(v))
	for i, s := range v {
		b[i] = []byte(s)
	}
	return NewBytes(name, shape, b)
}

// AppendBytesElement appends one BYTES element (its 4-byte little-endian
// length, then its bytes) to dst and returns the extended slice.
func AppendBytesElement(dst, b []byte) []byte {
	if uint64(len(b)) > math.MaxUint32 {
		panic("triton: BYTES element longer than 4 GiB")
	}
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(b)))
	return append(dst, b...)
}

// SplitBytes splits raw BYTES contents into their elements. The elements
// alias raw. It fails on a truncated length or element.
func SplitBytes(raw []byte) ([][]byte, error) {
	var out [][]byte
	for off := 0; off < len(raw); {
		if len(raw)-off < 4 {
			return nil, fmt.Errorf("BYTES element %d: %d bytes left, need a 4-byte length", len(out), len(raw)-off)
		}
		n := uint64(binary.LittleEndian.Uint32(raw[off:]))
		off += 4
		if n > uint64(len(raw)-off) {
			return nil, fmt.Errorf("BYTES element %d: length %d, but %d bytes left", len(out), n, len(raw)-off)
		}
		out = append(out, raw[off:off+int(n)])
		off += int(n)
	}
	return out, nil
}

// CountBytes returns the number of elements of raw BYTES contents without
// splitting them (it allocates nothing). It fails, as SplitBytes does, on a
// truncated length or element.
func CountBytes(raw []byte) (int64, error) {
	var n int64
	for off := 0; off < len(raw); n++ {
		if len(raw)-off < 4 {
			return 0, fmt.Errorf("BYTES element %d: %d bytes left, need a 4-byte length", n, len(raw)-off)
		}
		l := uint64(binary.LittleEndian.Uint32(raw[off:]))
		off += 4
		if l > uint64(len(raw)-off) {
			return 0, fmt.Errorf("BYTES element %d: length %d, but %d bytes left", n, l, len(raw)-off)
		}
		off += int(l)
	}
	return n, nil
}

// Bytes returns the elements of a BYTES tensor. They alias t.Raw.
func (t Tensor) Bytes() ([][]byte, error) {
	if t.Datatype != BYTES {
		return nil, fmt.Errorf("tensor %q: datatype is %s, not %s", t.Name, t.Datatype, BYTES)
	}
	v, err := SplitBytes(t.Raw)
	if err != nil {
		return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	return v, nil
}

// Strings returns the elements of a BYTES tensor as strings.
func (t Tensor) Strings() ([]string, error) {
	b, err := t.Bytes()
	if err != nil {
		return nil, err
	}
	s := make([]string, len(b))
	for i, e := range b {
		s[i] = string(e)
	}
	return s, nil
}
