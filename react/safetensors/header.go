package safetensors

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"unicode/utf8"
)

// MaxHeaderSize is the largest JSON header the reader accepts, in bytes. The
// reference implementation uses the same limit.
const MaxHeaderSize = 100_000_000

// metadataKey is the reserved header entry holding the string metadata.
const metadataKey = "__metadata__"

// TensorInfo describes one tensor of a file: its element type, its shape and
// the byte range [Offsets[0], Offsets[1]) it occupies in the data section.
type TensorInfo struct {
	Name    string
	DType   DType
	Shape   []int
	Offsets [2]int64
}

// NumElements returns the number of elements, the product of the shape.
func (t TensorInfo) NumElements() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= int64(d)
	}
	return n
}

// Header is the parsed and checked JSON header of a file.
type Header struct {
	// Metadata holds the "__metadata__" entry; nil when the file has none.
	Metadata map[string]string
	// Tensors lists the tensors in the order of their data.
	Tensors []TensorInfo
}

// DataSize returns the size in bytes of the data section the header
// describes.
func (h *Header) DataSize() int64 {
	if len(h.Tensors) == 0 {
		return 0
	}
	return h.Tensors[len(h.Tensors)-1].Offsets[1]
}

// Tensor returns the description of the named tensor.
func (h *Header) Tensor(name string) (TensorInfo, bool) {
	for _, t := range h.Tensors {
		if t.Name == name {
			return t, true
		}
	}
	return TensorInfo{}, false
}

// ReadHeader reads the length prefix and the JSON header from r and checks
// the header for consistency. It leaves r positioned at the start of the
// data section and does not read the data, so it cannot tell whether the
// data section is complete; ReadFileHeader can.
func ReadHeader(r io.Reader) (*Header, error) {
	var prefix [8]byte
	if _, err := io.ReadFull(r, prefix[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, errors.New("safetensors: file is shorter than the 8-byte header length")
		}
		return nil, fmt.Errorf("safetensors: reading header length: %w", err)
	}
	n, err := checkHeaderLength(prefix[:], -1)
	if err != nil {
		return nil, err
	}
	// Grow the buffer as bytes arrive rather than trusting n up front.
	var buf bytes.Buffer
	if k, err := io.CopyN(&buf, r, n); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("safetensors: header length %d is larger than the rest of the file (%d bytes)", n, k)
		}
		return nil, fmt.Errorf("safetensors: reading header: %w", err)
	}
	return parseHeader(buf.Bytes())
}

// checkHeaderLength decodes the little-endian length prefix and checks it
// against MaxHeaderSize and, when size ≥ 0, against the size of the file.
func checkHeaderLength(prefix []byte, size int64) (int64, error) {
	var n uint64
	for i := 7; i >= 0; i-- {
		n = n<<8 | uint64(prefix[i])
	}
	if size >= 0 && n > uint64(size-8) {
		return 0, fmt.Errorf("safetensors: header length %d is larger than the rest of the file (%d bytes)", n, size-8)
	}
	if n > MaxHeaderSize {
		return 0, fmt.Errorf("safetensors: header length %d exceeds the limit of %d bytes", n, MaxHeaderSize)
	}
	if n < 2 {
		return 0, fmt.Errorf("safetensors: header length %d is too small for a JSON object", n)
	}
	return int64(n), nil
}

// parseHeader decodes and checks the JSON header.
func parseHeader(buf []byte) (*Header, error) {
	if !utf8.Valid(buf) {
		return nil, errors.New("safetensors: header is not valid UTF-8")
	}
	h := &Header{}
	dec := json.NewDecoder(bytes.NewReader(buf))
	err := decodeObject(dec, func(key string) error {
		if key == metadataKey {
			md, err := decodeMetadata(dec)
			if err != nil {
				return err
			}
			h.Metadata = md
			return nil
		}
		t, err := decodeTensorInfo(dec, key)
		if err != nil {
			return err
		}
		h.Tensors = append(h.Tensors, t)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("safetensors: invalid header: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("safetensors: invalid header: data after the JSON object")
	}
	if err := checkLayout(h.Tensors); err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	return h, nil
}

// decodeObject reads one JSON object from dec, calling fn for each key with
// dec positioned at the key's value; fn must consume the value. Duplicate
// keys are an error.
func decodeObject(dec *json.Decoder, fn func(key string) error) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("want a JSON object, found %s", describeToken(tok))
	}
	seen := make(map[string]bool)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, ok := tok.(string)
		if !ok {
			return fmt.Errorf("want an object key, found %s", describeToken(tok))
		}
		if seen[key] {
			return fmt.Errorf("duplicate name %q", key)
		}
		seen[key] = true
		if err := fn(key); err != nil {
			return err
		}
	}
	tok, err = dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != '}' {
		return fmt.Errorf("want the end of an object, found %s", describeToken(tok))
	}
	return nil
}

func describeToken(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		return fmt.Sprintf("%q", string(v))
	case string:
		return fmt.Sprintf("string %q", v)
	case nil:
		return "null"
	default:
		return fmt.Sprintf("%v", v)
	}
}

func decodeMetadata(dec *json.Decoder) (map[string]string, error) {
	md := make(map[string]string)
	err := decodeObject(dec, func(key string) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		v, ok := tok.(string)
		if !ok {
			return fmt.Errorf("%s: value of %q is %s, want a string", metadataKey, key, describeToken(tok))
		}
		md[key] = v
		return nil
	})
	if err != nil {
		return nil, err
	}
	return md, nil
}

func decodeTensorInfo(dec *json.Decoder, name string) (TensorInfo, error) {
	t := TensorInfo{Name: name}
	var haveDType, haveShape, haveOffsets bool
	err := decodeObject(dec, func(key string) error {
		switch key {
		case "dtype":
			tok, err := dec.Token()
			if err != nil {
				return err
			}
			s, ok := tok.(string)
			if !ok {
				return fmt.Errorf("dtype is %s, want a string", describeToken(tok))
			}
			t.DType, haveDType = DType(s), true
		case "shape":
			dims, err := decodeUints(dec)
			if err != nil {
				return fmt.Errorf("shape: %w", err)
			}
			t.Shape = make([]int, len(dims))
			for i, d := range dims {
				if d > math.MaxInt32 {
					return fmt.Errorf("shape: dimension %d is too large", d)
				}
				t.Shape[i] = int(d)
			}
			haveShape = true
		case "data_offsets":
			offs, err := decodeUints(dec)
			if err != nil {
				return fmt.Errorf("data_offsets: %w", err)
			}
			if len(offs) != 2 {
				return fmt.Errorf("data_offsets has %d numbers, want 2", len(offs))
			}
			for i, o := range offs {
				if o > math.MaxInt64/2 {
					return fmt.Errorf("data_offsets: offset %d is too large", o)
				}
				t.Offsets[i] = int64(o)
			}
			haveOffsets = true
		default:
			return fmt.Errorf("unknown field %q", key)
		}
		return nil
	})
	if err != nil {
		return t, fmt.Errorf("tensor %q: %w", name, err)
	}
	switch {
	case !haveDType:
		return t, fmt.Errorf("tensor %q: missing dtype", name)
	case !haveShape:
		return t, fmt.Errorf("tensor %q: missing shape", name)
	case !haveOffsets:
		return t, fmt.Errorf("tensor %q: missing data_offsets", name)
	}
	return t, nil
}

// decodeUints reads a JSON array of non-negative integers.
func decodeUints(dec *json.Decoder) ([]uint64, error) {
	var raw []json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("want an array of non-negative integers: %w", err)
	}
	if raw == nil {
		return nil, errors.New("want an array of non-negative integers, found null")
	}
	out := make([]uint64, len(raw))
	for i, r := range raw {
		v, err := strconv.ParseUint(string(r), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s is not a non-negative integer", r)
		}
		out[i] = v
	}
	return out, nil
}

// checkLayout checks each tensor's dtype and byte count and that the byte
// ranges tile [0, DataSize) without gaps or overlaps; it sorts tensors by
// offset.
func checkLayout(ts []TensorInfo) error {
	for _, t := range ts {
		size := t.DType.Size()
		if size == 0 {
			return fmt.Errorf("tensor %q: unknown dtype %q", t.Name, t.DType)
		}
		n := int64(size)
		for _, d := range t.Shape {
			if d != 0 && n > math.MaxInt64/4/int64(d) {
				return fmt.Errorf("tensor %q: shape %v is too large", t.Name, t.Shape)
			}
			n *= int64(d)
		}
		b, e := t.Offsets[0], t.Offsets[1]
		if e < b {
			return fmt.Errorf("tensor %q: data_offsets [%d, %d] end before they begin", t.Name, b, e)
		}
		if e-b != n {
			return fmt.Errorf("tensor %q: shape %v of %s needs %d bytes, but data_offsets [%d, %d] hold %d", t.Name, t.Shape, t.DType, n, b, e, e-b)
		}
	}
	sort.SliceStable(ts, func(i, j int) bool {
		if ts[i].Offsets[0] != ts[j].Offsets[0] {
			return ts[i].Offsets[0] < ts[j].Offsets[0]
		}
		return ts[i].Offsets[1] < ts[j].Offsets[1]
	})
	var end int64
	for _, t := range ts {
		switch b := t.Offsets[0]; {
		case b < end:
			return fmt.Errorf("tensor %q: data_offsets [%d, %d] overlap another tensor's data", t.Name, b, t.Offsets[1])
		case b > end:
			return fmt.Errorf("tensor %q: data_offsets [%d, %d] leave a gap of %d bytes after offset %d", t.Name, b, t.Offsets[1], b-end, end)
		}
		end = t.Offsets[1]
	}
	return nil
}
