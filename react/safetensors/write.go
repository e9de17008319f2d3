package safetensors

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/mergectl/react-triton/internal/atomicfile"
)

// EncodeHeader returns the length prefix and the padded JSON header that
// describe tensors laid out contiguously in the given order, with the given
// metadata (nil for none). It checks that names are unique and non-empty,
// that dtypes are known and that each tensor's data matches its shape.
func EncodeHeader(tensors []Tensor, metadata map[string]string) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("{")
	first := true
	comma := func() {
		if !first {
			b.WriteString(",")
		}
		first = false
	}
	if metadata != nil {
		comma()
		writeJSONString(&b, metadataKey)
		b.WriteString(":{")
		keys := make([]string, 0, len(metadata))
		for k := range metadata {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for i, k := range keys {
			if i > 0 {
				b.WriteString(",")
			}
			writeJSONString(&b, k)
			b.WriteString(":")
			writeJSONString(&b, metadata[k])
		}
		b.WriteString("}")
	}
	seen := make(map[string]bool, len(tensors))
	var off int64
	for _, t := range tensors {
		if t.Name == "" || t.Name == metadataKey {
			return nil, fmt.Errorf("safetensors: invalid tensor name %q", t.Name)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("safetensors: duplicate tensor name %q", t.Name)
		}
		seen[t.Name] = true
		if !t.DType.Valid() {
			return nil, fmt.Errorf("safetensors: tensor %q: unknown dtype %q", t.Name, t.DType)
		}
		n := int64(t.DType.Size())
		for _, d := range t.Shape {
			if d < 0 {
				return nil, fmt.Errorf("safetensors: tensor %q: negative dimension in shape %v", t.Name, t.Shape)
			}
			n *= int64(d)
		}
		if n != int64(len(t.Data)) {
			return nil, fmt.Errorf("safetensors: tensor %q: shape %v of %s needs %d bytes, have %d", t.Name, t.Shape, t.DType, n, len(t.Data))
		}
		comma()
		writeJSONString(&b, t.Name)
		fmt.Fprintf(&b, `:{"dtype":%q,"shape":[`, string(t.DType))
		for i, d := range t.Shape {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "%d", d)
		}
		fmt.Fprintf(&b, `],"data_offsets":[%d,%d]}`, off, off+n)
		off += n
	}
	b.WriteString("}")
	// Pad with spaces so that the data section starts 8-byte aligned.
	for (8+b.Len())%8 != 0 {
		b.WriteByte(' ')
	}
	if b.Len() > MaxHeaderSize {
		return nil, errors.New("safetensors: header too large")
	}
	out := make([]byte, 8, 8+b.Len())
	n := uint64(b.Len())
	for i := 0; i < 8; i++ {
		out[i] = byte(n >> (8 * i))
	}
	return append(out, b.Bytes()...), nil
}

func writeJSONString(b *bytes.Buffer, s string) {
	enc, _ := json.Marshal(s) // a string always marshals
	b.Write(enc)
}

// Write writes tensors, contiguously in the given order, and metadata (nil
// for none) to w in the safetensors format.
func Write(w io.Writer, tensors []Tensor, metadata map[string]string) error {
	hdr, err := EncodeHeader(tensors, metadata)
	if err != nil {
		return err
	}
	if _, err := w.Write(hdr); err != nil {
		return err
	}
	for _, t := range tensors {
		if _, err := w.Write(t.Data); err != nil {
			return err
		}
	}
	return nil
}

// Marshal returns the safetensors encoding of tensors and metadata.
func Marshal(tensors []Tensor, metadata map[string]string) ([]byte, error) {
	var b bytes.Buffer
	if err := Write(&b, tensors, metadata); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// WriteFile writes tensors and metadata to the named file atomically: to a
// temporary file in the same directory, synced, then renamed into place, so
// that readers see either the old file or the complete new one.
func WriteFile(path string, tensors []Tensor, metadata map[string]string, perm os.FileMode) error {
	hdr, err := EncodeHeader(tensors, metadata)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, perm, func(w io.Writer) error {
		if _, err := w.Write(hdr); err != nil {
			return err
		}
		for _, t := range tensors {
			if _, err := w.Write(t.Data); err != nil {
				return err
			}
		}
		return nil
	})
}
