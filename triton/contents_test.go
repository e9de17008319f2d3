package triton

import (
	"bytes"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/mergectl/react-triton/triton/tritonpb"
)

func TestContentsRoundTrip(t *testing.T) {
	s := []int64{2}
	tests := []struct {
		tensor Tensor
		want   *tritonpb.InferTensorContents
	}{
		{NewBool("x", s, []bool{true, false}), &tritonpb.InferTensorContents{BoolContents: []bool{true, false}}},
		{NewInt8("x", s, []int8{-128, 127}), &tritonpb.InferTensorContents{IntContents: []int32{-128, 127}}},
		{NewInt16("x", s, []int16{-300, 300}), &tritonpb.InferTensorContents{IntContents: []int32{-300, 300}}},
		{NewInt32("x", s, []int32{-1, 1}), &tritonpb.InferTensorContents{IntContents: []int32{-1, 1}}},
		{NewInt64("x", s, []int64{-1, 1 << 40}), &tritonpb.InferTensorContents{Int64Contents: []int64{-1, 1 << 40}}},
		{NewUint8("x", s, []uint8{0, 255}), &tritonpb.InferTensorContents{UintContents: []uint32{0, 255}}},
		{NewUint16("x", s, []uint16{0, 65535}), &tritonpb.InferTensorContents{UintContents: []uint32{0, 65535}}},
		{NewUint32("x", s, []uint32{0, 1 << 31}), &tritonpb.InferTensorContents{UintContents: []uint32{0, 1 << 31}}},
		{NewUint64("x", s, []uint64{0, 1 << 63}), &tritonpb.InferTensorContents{Uint64Contents: []uint64{0, 1 << 63}}},
		{NewFP32("x", s, []float32{1.5, -2}), &tritonpb.InferTensorContents{Fp32Contents: []float32{1.5, -2}}},
		{NewFP64("x", s, []float64{1.5, -2}), &tritonpb.InferTensorContents{Fp64Contents: []float64{1.5, -2}}},
		{NewStrings("x", s, []string{"a", ""}), &tritonpb.InferTensorContents{BytesContents: [][]byte{[]byte("a"), {}}}},
	}
	for _, tt := range tests {
		t.Run(tt.tensor.Datatype, func(t *testing.T) {
			c, err := ToContents(tt.tensor)
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(c, tt.want) {
				t.Errorf("ToContents = %v, want %v", c, tt.want)
			}
			back, err := FromContents("x", tt.tensor.Datatype, s, c)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(back.Raw, tt.tensor.Raw) || back.Datatype != tt.tensor.Datatype {
				t.Errorf("FromContents raw % x, want % x", back.Raw, tt.tensor.Raw)
			}
		})
	}
}

func TestContentsErrors(t *testing.T) {
	for _, dt := range []string{FP16, BF16} {
		_, err := ToContents(Tensor{Name: "emb", Datatype: dt, Raw: []byte{0, 0}})
		if err == nil || !strings.Contains(err.Error(), dt+" has no typed contents field") || !strings.Contains(err.Error(), "raw") {
			t.Errorf("ToContents(%s) error %v, want the no-typed-field error", dt, err)
		}
		if _, err := FromContents("emb", dt, nil, &tritonpb.InferTensorContents{}); err == nil {
			t.Errorf("FromContents(%s) succeeded, want an error", dt)
		}
	}
	_, err := FromContents("x", INT8, []int64{1}, &tritonpb.InferTensorContents{IntContents: []int32{200}})
	if err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("INT8 200: error %v, want out of range", err)
	}
	_, err = FromContents("x", UINT16, []int64{1}, &tritonpb.InferTensorContents{UintContents: []uint32{70000}})
	if err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("UINT16 70000: error %v, want out of range", err)
	}
	if _, err := ToContents(Tensor{Name: "x", Datatype: "COMPLEX"}); err == nil {
		t.Error("unknown datatype accepted")
	}
}
