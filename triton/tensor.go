package triton

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/mergectl/react-triton/triton/tritonpb"
)

// Datatype names of the inference protocol, as they appear in
// ModelMetadata and in inference requests and responses.
const (
	BOOL   = "BOOL"
	UINT8  = "UINT8"
	UINT16 = "UINT16"
	UINT32 = "UINT32"
	UINT64 = "UINT64"
	INT8   = "INT8"
	INT16  = "INT16"
	INT32  = "INT32"
	INT64  = "INT64"
	FP16   = "FP16"
	FP32   = "FP32"
	FP64   = "FP64"
	BF16   = "BF16"
	BYTES  = "BYTES"
)

// Tensor is a named tensor whose elements are held as little-endian bytes in
// row-major order, the layout of raw_input_contents and raw_output_contents.
// BYTES elements are each prefixed with their length as a 4-byte
// little-endian integer.
//
// Build tensors with the constructors (NewFP32, NewFP16, NewBytes, ...) and
// read them with the accessors (Tensor.FP32, Tensor.AsFloat32, ...).
type Tensor struct {
	Name     string
	Datatype string
	Shape    []int64
	Raw      []byte
}

// ElementSize returns the size in bytes of one element of datatype dt, and
// false for BYTES (variable size) and for unknown datatypes.
func ElementSize(dt string) (int, bool) {
	switch dt {
	case BOOL, UINT8, INT8:
		return 1, true
	case UINT16, INT16, FP16, BF16:
		return 2, true
	case UINT32, INT32, FP32:
		return 4, true
	case UINT64, INT64, FP64:
		return 8, true
	}
	return 0, false
}

// KnownDatatype reports whether dt is a datatype of the protocol.
func KnownDatatype(dt string) bool {
	_, fixed := ElementSize(dt)
	return fixed || dt == BYTES
}

// MaxElements is the most elements NumElements accepts in a shape. No
// larger tensor fits in a message, which both sides cap at math.MaxInt32
// bytes, since every element takes at least one byte; the bound also keeps
// every byte count computed from a shape (at most 8 bytes per element) far
// from overflowing an int64.
const MaxElements = math.MaxInt32

// NumElements returns the number of elements of a tensor of the given shape:
// the product of its dimensions, 1 for a scalar (empty shape). It fails on a
// negative dimension, and on a dimension or a product above MaxElements,
// without overflowing. A shape with a zero dimension has no elements, but
// its other dimensions must still be at most MaxElements.
func NumElements(shape []int64) (int64, error) {
	n := int64(1)
	for _, d := range shape {
		switch {
		case d < 0:
			return 0, fmt.Errorf("shape %s has a negative dimension", FormatShape(shape))
		case d > MaxElements:
			return 0, fmt.Errorf("shape %s has a dimension above %d", FormatShape(shape), int64(MaxElements))
		}
	}
	for _, d := range shape {
		if d == 0 {
			return 0, nil
		}
	}
	for _, d := range shape {
		if n > MaxElements/d {
			return 0, fmt.Errorf("shape %s has more than %d elements", FormatShape(shape), int64(MaxElements))
		}
		n *= d
	}
	return n, nil
}

// FormatShape formats a shape as "[2 -1 4]".
func FormatShape(shape []int64) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, d := range shape {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.FormatInt(d, 10))
	}
	b.WriteByte(']')
	return b.String()
}

// DatatypeFromConfig returns the protocol datatype name of a model
// configuration data type (TYPE_FP32 -> "FP32", TYPE_STRING -> "BYTES"), or
// "" for TYPE_INVALID and unknown values.
func DatatypeFromConfig(t tritonpb.DataType) string {
	switch t {
	case tritonpb.DataType_TYPE_INVALID:
		return ""
	case tritonpb.DataType_TYPE_STRING:
		return BYTES
	}
	name, ok := tritonpb.DataType_name[int32(t)]
	if !ok {
		return ""
	}
	return strings.TrimPrefix(name, "TYPE_")
}

// DatatypeToConfig returns the model configuration data type of a protocol
// datatype name ("FP32" -> TYPE_FP32, "BYTES" -> TYPE_STRING), or
// TYPE_INVALID for an unknown name.
func DatatypeToConfig(dt string) tritonpb.DataType {
	if dt == BYTES {
		return tritonpb.DataType_TYPE_STRING
	}
	if !KnownDatatype(dt) {
		return tritonpb.DataType_TYPE_INVALID
	}
	return tritonpb.DataType(tritonpb.DataType_value["TYPE_"+dt])
}
