package faketriton

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/x448/float16"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/triton/tritonpb"
)

// MaxBatch is the max_batch_size of the linear models.
const MaxBatch = 8

// Linear returns a batching model with one input and one output,
// y = M x + bias for each row x (bias may be nil), computed in float64: the
// input is decoded from inDT to float64, the output is rounded to float32
// and then to outDT (Round). M has one row per output element.
func Linear(name, in, inDT, out, outDT string, m [][]float64, bias []float64) *Model {
	rows, cols := len(m), len(m[0])
	return &Model{
		Name:         name,
		MaxBatchSize: MaxBatch,
		Inputs:       []Tensor{{Name: in, Datatype: inDT, Shape: []int64{-1, int64(cols)}}},
		Outputs:      []Tensor{{Name: out, Datatype: outDT, Shape: []int64{-1, int64(rows)}}},
		Infer: func(req *tritonpb.ModelInferRequest) (*tritonpb.ModelInferResponse, error) {
			if len(req.GetInputs()) != 1 || req.GetInputs()[0].GetName() != in {
				return nil, status.Errorf(codes.InvalidArgument, "%s: want exactly the input %q", name, in)
			}
			t := req.GetInputs()[0]
			if t.GetDatatype() != inDT {
				return nil, status.Errorf(codes.InvalidArgument, "%s: input %q is %s, want %s", name, in, t.GetDatatype(), inDT)
			}
			shape := t.GetShape()
			if len(shape) != 2 || shape[1] != int64(cols) || shape[0] < 1 || shape[0] > MaxBatch {
				return nil, status.Errorf(codes.InvalidArgument, "%s: input %q has shape %v, want [1..%d, %d]", name, in, shape, MaxBatch, cols)
			}
			var x []float64
			switch {
			case len(req.GetRawInputContents()) == 1:
				var err error
				if x, err = Decode(inDT, req.GetRawInputContents()[0]); err != nil {
					return nil, status.Errorf(codes.InvalidArgument, "%s: %v", name, err)
				}
			case len(req.GetRawInputContents()) == 0 && inDT == "FP32" && t.GetContents() != nil:
				for _, v := range t.GetContents().GetFp32Contents() {
					x = append(x, float64(v))
				}
			default:
				return nil, status.Errorf(codes.InvalidArgument, "%s: no data for %q", name, in)
			}
			b := int(shape[0])
			if len(x) != b*cols {
				return nil, status.Errorf(codes.InvalidArgument, "%s: %d values for shape %v", name, len(x), shape)
			}
			y := Affine(m, bias, x)
			want := req.GetOutputs()
			for _, o := range want {
				if o.GetName() != out {
					return nil, status.Errorf(codes.InvalidArgument, "%s: unknown output %q", name, o.GetName())
				}
			}
			return &tritonpb.ModelInferResponse{
				Outputs:           []*tritonpb.ModelInferResponse_InferOutputTensor{{Name: out, Datatype: outDT, Shape: []int64{int64(b), int64(rows)}}},
				RawOutputContents: [][]byte{Encode(outDT, y)},
			}, nil
		},
	}
}

// Backbone is the backbone of the tests: input "x" FP32 [-1, 3], output
// "feature" [-1, D] in dt, feature = M x + bias with M D×3.
func Backbone(name, dt string, m [][]float64, bias []float64) *Model {
	return Linear(name, "x", "FP32", "feature", dt, m, bias)
}

// Head is a head of the tests: input "feature" [-1, D] in dt, output
// "logits" FP32 [-1, K], logits = H feature with H K×D.
func Head(name, dt string, h [][]float64) *Model {
	return Linear(name, "feature", dt, "logits", "FP32", h, nil)
}

// Affine returns m x + bias for each row x of the row-major batch x (bias
// may be nil).
func Affine(m [][]float64, bias, x []float64) []float64 {
	y := Apply(m, x)
	if bias != nil {
		for i := range y {
			y[i] += bias[i%len(bias)]
		}
	}
	return y
}

// Apply returns m x for each row x of the row-major batch x.
func Apply(m [][]float64, x []float64) []float64 {
	rows, cols := len(m), len(m[0])
	b := len(x) / cols
	y := make([]float64, b*rows)
	for r := 0; r < b; r++ {
		for i := 0; i < rows; i++ {
			s := 0.0
			for j := 0; j < cols; j++ {
				s += m[i][j] * x[r*cols+j]
			}
			y[r*rows+i] = s
		}
	}
	return y
}

// Round returns v as the fake sends it in datatype dt: rounded to float32,
// then to FP16 or BF16 (to nearest, ties to even).
func Round(dt string, v float64) float64 {
	f := float32(v)
	switch dt {
	case "FP16":
		return float64(float16.Fromfloat32(f).Float32())
	case "BF16":
		return float64(math.Float32frombits(uint32(bf16(f)) << 16))
	}
	return float64(f)
}

// bf16 rounds a float32 to bfloat16 bits, to nearest, ties to even (finite
// values only: the tests send no NaN).
func bf16(f float32) uint16 {
	u := math.Float32bits(f)
	upper, lower := u>>16, u&0xffff
	switch {
	case lower > 0x8000, lower == 0x8000 && upper&1 == 1:
		upper++
	}
	return uint16(upper)
}

// ElementSize is the size of one element of a float datatype.
func ElementSize(dt string) int {
	if dt == "FP32" {
		return 4
	}
	return 2
}

// Encode returns v as little-endian raw contents of dt (FP32, FP16, BF16).
func Encode(dt string, v []float64) []byte {
	out := make([]byte, 0, len(v)*ElementSize(dt))
	for _, x := range v {
		f := float32(x)
		switch dt {
		case "FP32":
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(f))
		case "FP16":
			out = binary.LittleEndian.AppendUint16(out, float16.Fromfloat32(f).Bits())
		case "BF16":
			out = binary.LittleEndian.AppendUint16(out, bf16(f))
		default:
			panic("faketriton: Encode " + dt)
		}
	}
	return out
}

// Decode reads little-endian raw contents of dt (FP32, FP16, BF16).
func Decode(dt string, raw []byte) ([]float64, error) {
	size := ElementSize(dt)
	if dt != "FP32" && dt != "FP16" && dt != "BF16" {
		return nil, fmt.Errorf("cannot decode %s", dt)
	}
	if len(raw)%size != 0 {
		return nil, fmt.Errorf("%d bytes is not a whole number of %s", len(raw), dt)
	}
	out := make([]float64, len(raw)/size)
	for i := range out {
		switch dt {
		case "FP32":
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])))
		case "FP16":
			out[i] = float64(float16.Frombits(binary.LittleEndian.Uint16(raw[2*i:])).Float32())
		case "BF16":
			out[i] = float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(raw[2*i:])) << 16))
		}
	}
	return out, nil
}
