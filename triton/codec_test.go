package triton

import (
	"bytes"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestConstructorsLayout(t *testing.T) {
	shape := []int64{2}
	tests := []struct {
		name   string
		tensor Tensor
		dt     string
		raw    []byte
	}{
		{"bool", NewBool("x", shape, []bool{true, false}), BOOL, []byte{1, 0}},
		{"int8", NewInt8("x", shape, []int8{-1, 2}), INT8, []byte{0xff, 2}},
		{"int16", NewInt16("x", shape, []int16{-2, 0x0102}), INT16, []byte{0xfe, 0xff, 2, 1}},
		{"int32", NewInt32("x", shape, []int32{1, -1}), INT32, []byte{1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}},
		{"int64", NewInt64("x", []int64{1}, []int64{0x0102030405060708}), INT64, []byte{8, 7, 6, 5, 4, 3, 2, 1}},
		{"uint8", NewUint8("x", shape, []uint8{0, 255}), UINT8, []byte{0, 255}},
		{"uint16", NewUint16("x", []int64{1}, []uint16{0xABCD}), UINT16, []byte{0xcd, 0xab}},
		{"uint32", NewUint32("x", []int64{1}, []uint32{0xDEADBEEF}), UINT32, []byte{0xef, 0xbe, 0xad, 0xde}},
		{"uint64", NewUint64("x", []int64{1}, []uint64{1}), UINT64, []byte{1, 0, 0, 0, 0, 0, 0, 0}},
		{"fp32", NewFP32("x", shape, []float32{1, -2}), FP32, []byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0}},
		{"fp64", NewFP64("x", []int64{1}, []float64{1}), FP64, []byte{0, 0, 0, 0, 0, 0, 0xf0, 0x3f}},
		{"fp16", NewFP16("x", shape, []float32{1, 65504}), FP16, []byte{0x00, 0x3c, 0xff, 0x7b}},
		{"bf16", NewBF16("x", shape, []float32{1, -2}), BF16, []byte{0x80, 0x3f, 0x00, 0xc0}},
		{"bytes", NewBytes("x", shape, [][]byte{[]byte("ab"), {}}), BYTES, []byte{2, 0, 0, 0, 'a', 'b', 0, 0, 0, 0}},
		{"strings", NewStrings("x", []int64{1}, []string{"hé"}), BYTES, []byte{3, 0, 0, 0, 'h', 0xc3, 0xa9}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.tensor.Datatype != tt.dt {
				t.Errorf("datatype %s, want %s", tt.tensor.Datatype, tt.dt)
			}
			if !bytes.Equal(tt.tensor.Raw, tt.raw) {
				t.Errorf("raw % x, want % x", tt.tensor.Raw, tt.raw)
			}
		})
	}
}

func TestAccessorsRoundTrip(t *testing.T) {
	s := []int64{3}
	check := func(t *testing.T, got any, err error, want any) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("got %v, want %v", got, want)
		}
	}
	t.Run("bool", func(t *testing.T) {
		v := []bool{true, false, true}
		got, err := NewBool("x", s, v).Bool()
		check(t, got, err, v)
	})
	t.Run("int8", func(t *testing.T) {
		v := []int8{math.MinInt8, 0, math.MaxInt8}
		got, err := NewInt8("x", s, v).Int8()
		check(t, got, err, v)
	})
	t.Run("int16", func(t *testing.T) {
		v := []int16{math.MinInt16, 0, math.MaxInt16}
		got, err := NewInt16("x", s, v).Int16()
		check(t, got, err, v)
	})
	t.Run("int32", func(t *testing.T) {
		v := []int32{math.MinInt32, 0, math.MaxInt32}
		got, err := NewInt32("x", s, v).Int32()
		check(t, got, err, v)
	})
	t.Run("int64", func(t *testing.T) {
		v := []int64{math.MinInt64, 0, math.MaxInt64}
		got, err := NewInt64("x", s, v).Int64()
		check(t, got, err, v)
	})
	t.Run("uint8", func(t *testing.T) {
		v := []uint8{0, 1, math.MaxUint8}
		got, err := NewUint8("x", s, v).Uint8()
		check(t, got, err, v)
	})
	t.Run("uint16", func(t *testing.T) {
		v := []uint16{0, 1, math.MaxUint16}
		got, err := NewUint16("x", s, v).Uint16()
		check(t, got, err, v)
	})
	t.Run("uint32", func(t *testing.T) {
		v := []uint32{0, 1, math.MaxUint32}
		got, err := NewUint32("x", s, v).Uint32()
		check(t, got, err, v)
	})
	t.Run("uint64", func(t *testing.T) {
		v := []uint64{0, 1, math.MaxUint64}
		got, err := NewUint64("x", s, v).Uint64()
		check(t, got, err, v)
	})
	t.Run("fp32", func(t *testing.T) {
		v := []float32{-1.5, 0, math.MaxFloat32}
		got, err := NewFP32("x", s, v).FP32()
		check(t, got, err, v)
	})
	t.Run("fp64", func(t *testing.T) {
		v := []float64{-1.5, 0, math.MaxFloat64}
		got, err := NewFP64("x", s, v).FP64()
		check(t, got, err, v)
	})
	t.Run("fp16 exact values", func(t *testing.T) {
		v := []float32{-1.5, 0x1p-24, 65504}
		got, err := NewFP16("x", s, v).FP16()
		check(t, got, err, v)
	})
	t.Run("bf16 exact values", func(t *testing.T) {
		v := []float32{-1.5, 0x1p-133, 0x1.FEp127}
		got, err := NewBF16("x", s, v).BF16()
		check(t, got, err, v)
	})
	t.Run("fp16 rounds", func(t *testing.T) {
		got, err := NewFP16("x", []int64{1}, []float32{0.1}).FP16()
		check(t, got, err, []float32{FP16Float32(0x2E66)})
	})
	t.Run("bytes", func(t *testing.T) {
		v := [][]byte{[]byte("a"), {}, bytes.Repeat([]byte{7}, 300)}
		got, err := NewBytes("x", s, v).Bytes()
		check(t, got, err, v)
	})
	t.Run("strings", func(t *testing.T) {
		v := []string{"", "numpy", "ünïcode"}
		got, err := NewStrings("x", s, v).Strings()
		check(t, got, err, v)
	})
	for _, dt := range []string{FP32, FP16, BF16, FP64} {
		t.Run("AsFloat32 "+dt, func(t *testing.T) {
			v := []float32{1, -2.5, 3}
			raw, err := EncodeFloat32(nil, dt, v)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Tensor{Name: "x", Datatype: dt, Raw: raw}.AsFloat32()
			check(t, got, err, v)
			// Appending to a destination keeps what it holds.
			dst, err := DecodeFloat32([]float32{9}, dt, raw)
			check(t, dst, err, append([]float32{9}, v...))
		})
	}
}

func TestAccessorErrors(t *testing.T) {
	tests := []struct {
		name string
		get  func() error
		want string
	}{
		{"datatype", func() error { _, err := NewFP16("x", nil, []float32{1}).FP32(); return err }, `tensor "x": datatype is FP16, not FP32`},
		{"partial element", func() error {
			_, err := Tensor{Name: "x", Datatype: FP32, Raw: make([]byte, 7)}.FP32()
			return err
		}, `tensor "x": 7 bytes is not a whole number of FP32 elements`},
		{"odd fp16", func() error { _, err := Tensor{Name: "x", Datatype: FP16, Raw: make([]byte, 3)}.FP16(); return err }, "3 bytes"},
		{"bytes not BYTES", func() error { _, err := NewFP32("x", nil, nil).Bytes(); return err }, "not BYTES"},
		{"truncated length", func() error { _, err := Tensor{Name: "x", Datatype: BYTES, Raw: []byte{1, 0}}.Bytes(); return err }, "need a 4-byte length"},
		{"truncated element", func() error {
			_, err := Tensor{Name: "x", Datatype: BYTES, Raw: []byte{5, 0, 0, 0, 'a'}}.Strings()
			return err
		}, "length 5, but 1 bytes left"},
		{"AsFloat32 of INT32", func() error { _, err := NewInt32("x", nil, nil).AsFloat32(); return err }, "not a floating-point type"},
		{"EncodeFloat32 to INT8", func() error { _, err := EncodeFloat32(nil, INT8, nil); return err }, "not a floating-point type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.get()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestNumElementsAndShape(t *testing.T) {
	tests := []struct {
		shape []int64
		n     int64
		err   bool
	}{
		{nil, 1, false},
		{[]int64{2, 4}, 8, false},
		{[]int64{0, 4}, 0, false},
		{[]int64{-1, 4}, 0, true},
		{[]int64{1 << 40, 1 << 40}, 0, true},
		{[]int64{1 << 61}, 0, true},
		{[]int64{1 << 62}, 0, true},
		{[]int64{1 << 31, 1 << 31, 1 << 31, 8}, 0, true}, // the product wraps to 0 in int64
		{[]int64{MaxElements}, MaxElements, false},
		{[]int64{MaxElements + 1}, 0, true},
		{[]int64{1 << 16, 1 << 15}, 0, true},
		{[]int64{1 << 15, 1 << 15}, 1 << 30, false},
		{[]int64{1 << 40, 0}, 0, true},           // zero elements, but an absurd dimension
		{[]int64{1 << 20, 0, 1 << 20}, 0, false}, // zero elements; the product of the rest would exceed the bound
	}
	for _, tt := range tests {
		n, err := NumElements(tt.shape)
		if (err != nil) != tt.err || n != tt.n {
			t.Errorf("NumElements(%v) = %d, %v; want %d, error %v", tt.shape, n, err, tt.n, tt.err)
		}
	}
	if got := FormatShape([]int64{-1, 4}); got != "[-1 4]" {
		t.Errorf("FormatShape = %q", got)
	}
}

func TestDatatypeConfigMapping(t *testing.T) {
	for _, dt := range []string{BOOL, UINT8, UINT16, UINT32, UINT64, INT8, INT16, INT32, INT64, FP16, FP32, FP64, BF16, BYTES} {
		if got := DatatypeFromConfig(DatatypeToConfig(dt)); got != dt {
			t.Errorf("%s -> %v -> %s", dt, DatatypeToConfig(dt), got)
		}
	}
	if got := DatatypeToConfig("COMPLEX"); got != 0 {
		t.Errorf("unknown datatype -> %v, want TYPE_INVALID", got)
	}
}
