package jsontext

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/mergectl/react-triton/triton"
)

// ReadData reads the JSON data of a tensor at the scanner's position (an
// array, nested to any depth up to MaxDepth, whose leaves are the elements
// in row-major order) and returns them as raw little-endian contents of
// datatype dt, BYTES elements each prefixed with its 4-byte length. The
// data must hold exactly n elements (those of shape), each of the JSON kind dt needs:
// numbers in range for the integer types, numbers (or NaN, Inf, Infinity)
// for FP32 and FP64, true or false for BOOL, strings for BYTES.
//
// FP16 and BF16 have no JSON form, as in Triton.
//
// The output is sized from n but never beyond what the remaining JSON could
// hold (each element takes at least two bytes with its separator), so a
// shape that lies cannot make it allocate much more than the body's size.
func (s *Scanner) ReadData(dt string, n int64, shape []int64) ([]byte, error) {
	size, fixed := triton.ElementSize(dt)
	if dt == triton.FP16 || dt == triton.BF16 {
		return nil, fmt.Errorf("%s data cannot be given as JSON; send it as binary data", dt)
	}
	if !fixed && dt != triton.BYTES {
		return nil, fmt.Errorf("unknown datatype %q", dt)
	}
	room := int64(len(s.buf)-s.pos)/2 + 1 // most elements the rest can hold
	capacity := min(n, room)
	var out []byte
	if fixed {
		out = make([]byte, capacity*int64(size))
	} else {
		out = make([]byte, 0, int64(len(s.buf)-s.pos)+2*capacity)
	}
	if err := s.BeginArray(); err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	var count int64
	depth := 1
	counts := [MaxDepth]int{} // elements read at each open level
	for depth > 0 {
		ok, err := s.Element(&counts[depth-1])
		if err != nil {
			return nil, fmt.Errorf("data: %w", err)
		}
		if !ok {
			depth--
			continue
		}
		c, _ := s.Peek() // element found a value
		if c == '[' {
			if err := s.BeginArray(); err != nil {
				return nil, fmt.Errorf("data: %w", err)
			}
			counts[depth] = 0
			depth++
			continue
		}
		at := s.pos
		if out, err = s.appendElement(out, c, dt, size, count, capacity); err != nil {
			s.pos = at
			return nil, fmt.Errorf("data element %d: %w", count, err)
		}
		count++
	}
	if count != n {
		return nil, fmt.Errorf("data has %d elements, but shape %s needs %d", count, triton.FormatShape(shape), n)
	}
	return out, nil
}

// appendElement reads one element of datatype dt, whose first byte is c,
// and stores it in out, at index i of a fixed-size type (when i <
// capacity) or appended for BYTES.
func (s *Scanner) appendElement(out []byte, c byte, dt string, size int, i, capacity int64) ([]byte, error) {
	var err error
	if dt == triton.BYTES {
		if c != '"' {
			return out, fmt.Errorf("want a string for BYTES, got %s", KindName(c))
		}
		lenAt := len(out)
		out = append(out, 0, 0, 0, 0)
		if out, err = s.appendStr(out); err != nil {
			return out, err
		}
		n := len(out) - lenAt - 4
		if uint64(n) > math.MaxUint32 {
			return out, fmt.Errorf("string longer than 4 GiB")
		}
		binary.LittleEndian.PutUint32(out[lenAt:], uint32(n))
		return out, nil
	}
	if dt == triton.BOOL {
		v, err := s.Boolean()
		if err != nil {
			if c == 't' || c == 'f' {
				return out, err
			}
			return out, fmt.Errorf("want true or false for BOOL, got %s", KindName(c))
		}
		if i < capacity {
			out[i] = 0
			if v {
				out[i] = 1
			}
		}
		return out, nil
	}
	if c != '-' && c != 'N' && c != 'I' && (c < '0' || c > '9') {
		return out, fmt.Errorf("want a number for %s, got %s", dt, KindName(c))
	}
	if dt == triton.FP32 || dt == triton.FP64 {
		f, err := s.Float()
		if err != nil || i >= capacity {
			return out, err
		}
		if dt == triton.FP32 {
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(float32(f)))
		} else {
			binary.LittleEndian.PutUint64(out[8*i:], math.Float64bits(f))
		}
		return out, nil
	}
	tok, kind, err := s.Number()
	if err != nil {
		return out, err
	}
	if i >= capacity { // past the shape: keep counting, store nothing
		return out, nil
	}
	b := out[i*int64(size):]
	switch dt {
	case triton.INT8, triton.INT16, triton.INT32, triton.INT64:
		lo, hi := intRange(size)
		v, ok := ParseInt(tok, kind, lo, hi)
		if !ok {
			return out, intError(tok, kind, dt, fmt.Sprintf("[%d, %d]", lo, hi))
		}
		putUint(b, size, uint64(v))
	default: // UINT8, UINT16, UINT32, UINT64
		hi := uint64(math.MaxUint64) >> (64 - 8*size)
		v, ok := parseUint(tok, kind)
		if !ok || v > hi {
			return out, intError(tok, kind, dt, fmt.Sprintf("[0, %d]", hi))
		}
		putUint(b, size, v)
	}
	return out, nil
}

// intRange returns the range of a signed integer of size bytes.
func intRange(size int) (lo, hi int64) {
	hi = int64(uint64(math.MaxUint64) >> (64 - 8*size + 1))
	return -hi - 1, hi
}

func intError(tok []byte, kind NumKind, dt, bounds string) error {
	if kind != NumInt {
		return fmt.Errorf("%s is not an integer (%s)", tok, dt)
	}
	return fmt.Errorf("%s is out of range for %s %s", tok, dt, bounds)
}

// putUint stores the low size bytes of v little-endian in b.
func putUint(b []byte, size int, v uint64) {
	switch size {
	case 1:
		b[0] = byte(v)
	case 2:
		binary.LittleEndian.PutUint16(b, uint16(v))
	case 4:
		binary.LittleEndian.PutUint32(b, uint32(v))
	default:
		binary.LittleEndian.PutUint64(b, v)
	}
}
