package safetensors

// DType is the element type of a tensor, as spelled in the header.
type DType string

// The element types of the format. All multi-byte types are little-endian.
const (
	Bool   DType = "BOOL"
	U8     DType = "U8"
	I8     DType = "I8"
	F8E5M2 DType = "F8_E5M2"
	F8E4M3 DType = "F8_E4M3"
	I16    DType = "I16"
	U16    DType = "U16"
	F16    DType = "F16"
	BF16   DType = "BF16"
	I32    DType = "I32"
	U32    DType = "U32"
	F32    DType = "F32"
	I64    DType = "I64"
	U64    DType = "U64"
	F64    DType = "F64"
	C64    DType = "C64"
)

var dtypeSizes = map[DType]int{
	Bool: 1, U8: 1, I8: 1, F8E5M2: 1, F8E4M3: 1,
	I16: 2, U16: 2, F16: 2, BF16: 2,
	I32: 4, U32: 4, F32: 4,
	I64: 8, U64: 8, F64: 8, C64: 8,
}

// Size returns the size in bytes of one element, or 0 for an unknown dtype.
func (d DType) Size() int { return dtypeSizes[d] }

// Valid reports whether d is a dtype this package knows.
func (d DType) Valid() bool { return d.Size() > 0 }
