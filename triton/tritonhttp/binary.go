package tritonhttp

import (
	"fmt"
	"math"

	"github.com/mergectl/react-triton/triton"
)

// splitBinary checks the binary data that follow the JSON header (rest)
// against the tensors' binary_data_size parameters, shapes and datatypes,
// and sets the raw contents of each binary tensor to its part of rest.
// framed tells whether the body had an Inference-Header-Content-Length
// header.
func splitBinary(specs []tensorSpec, rest []byte, framed bool) error {
	var sum uint64
	over := false
	for i := range specs {
		t := &specs[i]
		if t.seen&fBinarySize == 0 {
			continue
		}
		if size, fixed := triton.ElementSize(t.datatype); fixed {
			want := uint64(t.n) * uint64(size) // at most 8·MaxElements: no overflow
			if t.binSize != want {
				return fmt.Errorf("%s %q: binary_data_size %d does not match shape %s of %s (%d bytes)",
					t.kind, t.name, t.binSize, triton.FormatShape(t.shape), t.datatype, want)
			}
		}
		if sum+t.binSize < sum {
			over = true
		}
		sum += t.binSize
	}
	switch {
	case !framed && (sum > 0 || over):
		return fmt.Errorf("binary_data_size given without an Inference-Header-Content-Length header")
	case over:
		return fmt.Errorf("binary_data_size add up to more than %d bytes, but %d bytes follow the JSON header", uint64(math.MaxUint64), len(rest))
	case sum != uint64(len(rest)):
		return fmt.Errorf("binary_data_size add up to %d bytes, but %d bytes follow the JSON header", sum, len(rest))
	}
	off := 0
	for i := range specs {
		t := &specs[i]
		if t.seen&fBinarySize == 0 {
			continue
		}
		end := off + int(t.binSize) // the sum fits in rest
		t.raw = rest[off:end:end]
		off = end
		if t.datatype != triton.BYTES {
			continue
		}
		n, err := triton.CountBytes(t.raw)
		if err != nil {
			return fmt.Errorf("%s %q: binary data: %w", t.kind, t.name, err)
		}
		if n != t.n {
			return fmt.Errorf("%s %q: binary data holds %d BYTES elements, but shape %s needs %d",
				t.kind, t.name, n, triton.FormatShape(t.shape), t.n)
		}
	}
	return nil
}
