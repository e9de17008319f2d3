package triton

import (
	"encoding/binary"
	"fmt"
	"math"
)

// fixed is the element types with a fixed-size little-endian encoding that
// encoding/binary handles without reflection.
type fixed interface {
	bool | int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64 | float32 | float64
}

func newFixed[T fixed](name, dt string, shape []int64, v []T) Tensor {
	size, _ := ElementSize(dt)
	raw, err := binary.Append(make([]byte, 0, size*len(v)), binary.LittleEndian, v)
	if err != nil { // cannot happen for the types in fixed
		panic(err)
	}
	return Tensor{Name: name, Datatype: dt, Shape: cloneShape(shape), Raw: raw}
}

func decodeFixed[T fixed](t Tensor, dt string) ([]T, error) {
	if err := t.check(dt); err != nil {
		return nil, err
	}
	size, _ := ElementSize(dt)
	v := make([]T, len(t.Raw)/size)
	if _, err := binary.Decode(t.Raw, binary.LittleEndian, v); err != nil {
		return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	return v, nil
}

// check reports whether t has datatype dt and a whole number of elements.
func (t Tensor) check(dt string) error {
	if t.Datatype != dt {
		return fmt.Errorf("tensor %q: datatype is %s, not %s", t.Name, t.Datatype, dt)
	}
	if size, _ := ElementSize(dt); len(t.Raw)%size != 0 {
		return fmt.Errorf("tensor %q: %d bytes is not a whole number of %s elements", t.Name, len(t.Raw), dt)
	}
	return nil
}

func cloneShape(shape []int64) []int64 {
	if shape == nil {
		return nil
	}
	return append([]int64(nil), shape...)
}

// NewBool returns a BOOL tensor holding v (one byte per element, 0 or 1).
func NewBool(name string, shape []int64, v []bool) Tensor { return newFixed(name, BOOL, shape, v) }

// NewInt8 returns an INT8 tensor holding v.
func NewInt8(name string, shape []int64, v []int8) Tensor { return newFixed(name, INT8, shape, v) }

// NewInt16 returns an INT16 tensor holding v.
func NewInt16(name string, shape []int64, v []int16) Tensor { return newFixed(name, INT16, shape, v) }

// NewInt32 returns an INT32 tensor holding v.
func NewInt32(name string, shape []int64, v []int32) Tensor { return newFixed(name, INT32, shape, v) }

// NewInt64 returns an INT64 tensor holding v.
func NewInt64(name string, shape []int64, v []int64) Tensor { return newFixed(name, INT64, shape, v) }

// NewUint8 returns a UINT8 tensor holding v.
func NewUint8(name string, shape []int64, v []uint8) Tensor { return newFixed(name, UINT8, shape, v) }

// NewUint16 returns a UINT16 tensor holding v.
func NewUint16(name string, shape []int64, v []uint16) Tensor {
	return newFixed(name, UINT16, shape, v)
}

// NewUint32 returns a UINT32 tensor holding v.
func NewUint32(name string, shape []int64, v []uint32) Tensor {
	return newFixed(name, UINT32, shape, v)
}

// NewUint64 returns a UINT64 tensor holding v.
func NewUint64(name string, shape []int64, v []uint64) Tensor {
	return newFixed(name, UINT64, shape, v)
}

// NewFP32 returns an FP32 tensor holding v.
func NewFP32(name string, shape []int64, v []float32) Tensor { return newFixed(name, FP32, shape, v) }

// NewFP64 returns an FP64 tensor holding v.
func NewFP64(name string, shape []int64, v []float64) Tensor { return newFixed(name, FP64, shape, v) }

// NewFP16 returns an FP16 tensor holding v, each value rounded to the
// nearest binary16 value (ties to even).
func NewFP16(name string, shape []int64, v []float32) Tensor {
	return Tensor{Name: name, Datatype: FP16, Shape: cloneShape(shape), Raw: AppendFP16(make([]byte, 0, 2*len(v)), v)}
}

// NewBF16 returns a BF16 tensor holding v, each value rounded to the
// nearest bfloat16 value (ties to even).
func NewBF16(name string, shape []int64, v []float32) Tensor {
	return Tensor{Name: name, Datatype: BF16, Shape: cloneShape(shape), Raw: AppendBF16(make([]byte, 0, 2*len(v)), v)}
}

// Bool returns the elements of a BOOL tensor; any non-zero byte is true.
func (t Tensor) Bool() ([]bool, error) { return decodeFixed[bool](t, BOOL) }

// Int8 returns the elements of an INT8 tensor.
func (t Tensor) Int8() ([]int8, error) { return decodeFixed[int8](t, INT8) }

// Int16 returns the elements of an INT16 tensor.
func (t Tensor) Int16() ([]int16, error) { return decodeFixed[int16](t, INT16) }

// Int32 returns the elements of an INT32 tensor.
func (t Tensor) Int32() ([]int32, error) { return decodeFixed[int32](t, INT32) }

// Int64 returns the elements of an INT64 tensor.
func (t Tensor) Int64() ([]int64, error) { return decodeFixed[int64](t, INT64) }

// Uint8 returns the elements of a UINT8 tensor.
func (t Tensor) Uint8() ([]uint8, error) { return decodeFixed[uint8](t, UINT8) }

// Uint16 returns the elements of a UINT16 tensor.
func (t Tensor) Uint16() ([]uint16, error) { return decodeFixed[uint16](t, UINT16) }

// Uint32 returns the elements of a UINT32 tensor.
func (t Tensor) Uint32() ([]uint32, error) { return decodeFixed[uint32](t, UINT32) }

// Uint64 returns the elements of a UINT64 tensor.
func (t Tensor) Uint64() ([]uint64, error) { return decodeFixed[uint64](t, UINT64) }

// FP32 returns the elements of an FP32 tensor.
func (t Tensor) FP32() ([]float32, error) { return decodeFixed[float32](t, FP32) }

// FP64 returns the elements of an FP64 tensor.
func (t Tensor) FP64() ([]float64, error) { return decodeFixed[float64](t, FP64) }

// FP16 returns the elements of an FP16 tensor as float32 values (exact).
func (t Tensor) FP16() ([]float32, error) {
	if err := t.check(FP16); err != nil {
		return nil, err
	}
	return DecodeFP16(make([]float32, 0, len(t.Raw)/2), t.Raw), nil
}

// BF16 returns the elements of a BF16 tensor as float32 values (exact).
func (t Tensor) BF16() ([]float32, error) {
	if err := t.check(BF16); err != nil {
		return nil, err
	}
	return DecodeBF16(make([]float32, 0, len(t.Raw)/2), t.Raw), nil
}

// AsFloat32 returns the elements of an FP32, FP16, BF16 or FP64 tensor as
// float32 values. FP64 values are rounded to float32.
func (t Tensor) AsFloat32() ([]float32, error) {
	return DecodeFloat32(nil, t.Datatype, t.Raw)
}

// AppendFP16 appends the binary16 encoding of v (rounded to nearest even) to
// dst and returns the extended slice.
func AppendFP16(dst []byte, v []float32) []byte {
	for _, f := range v {
		dst = binary.LittleEndian.AppendUint16(dst, FP16Bits(f))
	}
	return dst
}

// AppendBF16 appends the bfloat16 encoding of v (rounded to nearest even) to
// dst and returns the extended slice.
func AppendBF16(dst []byte, v []float32) []byte {
	for _, f := range v {
		dst = binary.LittleEndian.AppendUint16(dst, BF16Bits(f))
	}
	return dst
}

// DecodeFP16 appends the values of the binary16 elements in raw to dst and
// returns the extended slice. A trailing odd byte is ignored.
func DecodeFP16(dst []float32, raw []byte) []float32 {
	for i := 0; i+1 < len(raw); i += 2 {
		dst = append(dst, FP16Float32(binary.LittleEndian.Uint16(raw[i:])))
	}
	return dst
}

// DecodeBF16 appends the values of the bfloat16 elements in raw to dst and
// returns the extended slice. A trailing odd byte is ignored.
func DecodeBF16(dst []float32, raw []byte) []float32 {
	for i := 0; i+1 < len(raw); i += 2 {
		dst = append(dst, BF16Float32(binary.LittleEndian.Uint16(raw[i:])))
	}
	return dst
}

// EncodeFloat32 appends v encoded as datatype dt (FP32, FP16, BF16 or FP64)
// to dst and returns the extended slice. It lets a caller write values back
// in the datatype it read them in.
func EncodeFloat32(dst []byte, dt string, v []float32) ([]byte, error) {
	switch dt {
	case FP32:
		for _, f := range v {
			dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(f))
		}
	case FP16:
		dst = AppendFP16(dst, v)
	case BF16:
		dst = AppendBF16(dst, v)
	case FP64:
		for _, f := range v {
			dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(float64(f)))
		}
	default:
		return dst, fmt.Errorf("datatype %s is not a floating-point type", dt)
	}
	return dst, nil
}

// DecodeFloat32 appends the elements of raw, encoded as datatype dt (FP32,
// FP16, BF16 or FP64), to dst as float32 values and returns the extended
// slice. FP64 values are rounded to float32.
func DecodeFloat32(dst []float32, dt string, raw []byte) ([]float32, error) {
	size, ok := ElementSize(dt)
	if !ok || (dt != FP32 && dt != FP16 && dt != BF16 && dt != FP64) {
		return dst, fmt.Errorf("datatype %s is not a floating-point type", dt)
	}
	if len(raw)%size != 0 {
		return dst, fmt.Errorf("%d bytes is not a whole number of %s elements", len(raw), dt)
	}
	dst = grow(dst, len(raw)/size)
	switch dt {
	case FP32:
		for i := 0; i < len(raw); i += 4 {
			dst = append(dst, math.Float32frombits(binary.LittleEndian.Uint32(raw[i:])))
		}
	case FP16:
		dst = DecodeFP16(dst, raw)
	case BF16:
		dst = DecodeBF16(dst, raw)
	case FP64:
		for i := 0; i < len(raw); i += 8 {
			dst = append(dst, float32(math.Float64frombits(binary.LittleEndian.Uint64(raw[i:]))))
		}
	}
	return dst, nil
}

func grow(dst []float32, n int) []float32 {
	if cap(dst)-len(dst) < n {
		dst = append(make([]float32, 0, len(dst)+n), dst...)
	}
	return dst
}
