package triton

import (
	"fmt"
	"math"

	"github.com/mergectl/react-triton/triton/tritonpb"
)

// ToContents converts t to the protocol's typed contents: the repeated
// field that matches its datatype. FP16 and BF16 have no typed field in
// Triton's protocol and must be sent as raw contents; asking for them is an
// error.
func ToContents(t Tensor) (*tritonpb.InferTensorContents, error) {
	c := &tritonpb.InferTensorContents{}
	var err error
	switch t.Datatype {
	case BOOL:
		c.BoolContents, err = t.Bool()
	case INT8:
		c.IntContents, err = widen[int8, int32](t.Int8())
	case INT16:
		c.IntContents, err = widen[int16, int32](t.Int16())
	case INT32:
		c.IntContents, err = t.Int32()
	case INT64:
		c.Int64Contents, err = t.Int64()
	case UINT8:
		c.UintContents, err = widen[uint8, uint32](t.Uint8())
	case UINT16:
		c.UintContents, err = widen[uint16, uint32](t.Uint16())
	case UINT32:
		c.UintContents, err = t.Uint32()
	case UINT64:
		c.Uint64Contents, err = t.Uint64()
	case FP32:
		c.Fp32Contents, err = t.FP32()
	case FP64:
		c.Fp64Contents, err = t.FP64()
	case BYTES:
		c.BytesContents, err = t.Bytes()
	case FP16, BF16:
		return nil, fmt.Errorf("tensor %q: %s has no typed contents field in Triton's protocol; send it as raw contents", t.Name, t.Datatype)
	default:
		return nil, fmt.Errorf("tensor %q: unknown datatype %q", t.Name, t.Datatype)
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// FromContents builds a tensor from typed contents, reading the repeated
// field that matches dt. Narrow integer types (INT8, INT16, UINT8, UINT16),
// which travel in 32-bit fields, are range-checked.
func FromContents(name, dt string, shape []int64, c *tritonpb.InferTensorContents) (Tensor, error) {
	var t Tensor
	var err error
	switch dt {
	case BOOL:
		t = NewBool(name, shape, c.GetBoolContents())
	case INT8:
		var v []int8
		v, err = narrow[int8](c.GetIntContents(), math.MinInt8, math.MaxInt8)
		t = NewInt8(name, shape, v)
	case INT16:
		var v []int16
		v, err = narrow[int16](c.GetIntContents(), math.MinInt16, math.MaxInt16)
		t = NewInt16(name, shape, v)
	case INT32:
		t = NewInt32(name, shape, c.GetIntContents())
	case INT64:
		t = NewInt64(name, shape, c.GetInt64Contents())
	case UINT8:
		var v []uint8
		v, err = narrow[uint8](c.GetUintContents(), 0, math.MaxUint8)
		t = NewUint8(name, shape, v)
	case UINT16:
		var v []uint16
		v, err = narrow[uint16](c.GetUintContents(), 0, math.MaxUint16)
		t = NewUint16(name, shape, v)
	case UINT32:
		t = NewUint32(name, shape, c.GetUintContents())
	case UINT64:
		t = NewUint64(name, shape, c.GetUint64Contents())
	case FP32:
		t = NewFP32(name, shape, c.GetFp32Contents())
	case FP64:
		t = NewFP64(name, shape, c.GetFp64Contents())
	case BYTES:
		t = NewBytes(name, shape, c.GetBytesContents())
	case FP16, BF16:
		return Tensor{}, fmt.Errorf("tensor %q: %s has no typed contents field in Triton's protocol", name, dt)
	default:
		return Tensor{}, fmt.Errorf("tensor %q: unknown datatype %q", name, dt)
	}
	if err != nil {
		return Tensor{}, fmt.Errorf("tensor %q: %s contents: %w", name, dt, err)
	}
	return t, nil
}

func widen[S int8 | int16 | uint8 | uint16, D int32 | uint32](v []S, err error) ([]D, error) {
	if err != nil {
		return nil, err
	}
	out := make([]D, len(v))
	for i, x := range v {
		out[i] = D(x)
	}
	return out, nil
}

func narrow[D int8 | int16 | uint8 | uint16, S int32 | uint32](v []S, lo, hi int64) ([]D, error) {
	out := make([]D, len(v))
	for i, x := range v {
		if int64(x) < lo || int64(x) > hi {
			return nil, fmt.Errorf("element %d: %d is out of range [%d, %d]", i, x, lo, hi)
		}
		out[i] = D(x)
	}
	return out, nil
}
