package componentsfile

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/mergectl/react-triton/react/internal/reacttest"
	"github.com/mergectl/react-triton/react/safetensors"
)

func dataSHA256(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// FuzzReadComponents checks that no input makes the components reader
// panic, and that whatever it accepts is valid and survives a write and a
// second read byte for byte.
func FuzzReadComponents(f *testing.F) {
	for i, tasks := range [][]string{{"a"}, {"cars", "dtd"}} {
		var buf bytes.Buffer
		if err := Write(&buf, reacttest.Components(f, 2, uint64(i), tasks...)); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		checkComponentsInput(t, b)
		// Most mutations only break a checksum; repair both so that the fuzzer
		// also reaches the decoding behind them.
		if fixed := withRepairedChecksum(b); fixed != nil {
			checkComponentsInput(t, fixed)
		}
	})
}

// withRepairedChecksum returns b re-encoded with the sha256 metadata of its
// actual data section and the metadata_sha256 of its actual metadata, or nil
// if b is not a safetensors file with metadata.
func withRepairedChecksum(b []byte) []byte {
	f, err := safetensors.Parse(b)
	if err != nil || f.Metadata == nil {
		return nil
	}
	f.Metadata[MetaSHA256] = dataSHA256(f.Data)
	f.Metadata[MetaMetadataSHA256] = MetadataSHA256(f.Metadata)
	var ts []safetensors.Tensor
	for _, info := range f.Tensors {
		t, _ := f.Tensor(info.Name)
		ts = append(ts, t)
	}
	out, err := safetensors.Marshal(ts, f.Metadata)
	if err != nil {
		return nil
	}
	return out
}

// checkComponentsInput checks that reading b does not panic and that what
// is accepted is valid and round-trips.
func checkComponentsInput(t *testing.T, b []byte) {
	c, err := Parse(b)
	if err != nil {
		return
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("accepted components are invalid: %v", err)
	}
	var buf bytes.Buffer
	if err := Write(&buf, c); err != nil {
		t.Fatalf("writing accepted components: %v", err)
	}
	c2, err := Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatalf("reading re-written components: %v", err)
	}
	var buf2 bytes.Buffer
	if err := Write(&buf2, c2); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), buf2.Bytes()) {
		t.Fatal("a second round trip changed the bytes")
	}
}
