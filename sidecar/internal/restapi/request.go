package restapi

import (
	"encoding/binary"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/sidecar/pipeline"
	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/tritonhttp"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// RawInput turns a raw binary request (Inference-Header-Content-Length 0:
// the whole body is the data of the model's only input) for a controllable
// model into an ordinary one, by Triton's rule: the model must have one
// input; a batching model gets a batch of 1; of the other dimensions at
// most one may be variable, and it is deduced from the body's size; a
// BYTES input must hold exactly one element, the body.
func RawInput(m *pipeline.Model, req *tritonhttp.Request) error {
	inputs := m.Metadata().GetInputs()
	if len(inputs) != 1 {
		return status.Errorf(codes.InvalidArgument, "model %q: a raw binary request (Inference-Header-Content-Length 0) is only for models with one input; this one has %d", m.Name(), len(inputs))
	}
	in := inputs[0]
	dims := in.GetShape()
	var shape []int64
	if m.Config().GetMaxBatchSize() > 0 && len(dims) > 0 {
		shape, dims = []int64{1}, dims[1:]
	}
	variable, elements := -1, int64(1)
	for _, d := range dims {
		if d < 0 {
			if variable >= 0 {
				return status.Errorf(codes.InvalidArgument, "model %q: the shape of the raw input %q cannot be deduced: it has more than one variable-sized dimension", m.Name(), in.GetName())
			}
			variable = len(shape)
		} else {
			elements *= d
		}
		shape = append(shape, d)
	}
	data := req.RawBody
	if in.GetDatatype() == triton.BYTES {
		if variable >= 0 || elements != 1 {
			return status.Errorf(codes.InvalidArgument, "model %q: for a BYTES raw input, the model must have input shape [1]", m.Name())
		}
		data = binary.LittleEndian.AppendUint32(make([]byte, 0, 4+len(data)), uint32(len(data)))
		data = append(data, req.RawBody...)
	} else if variable >= 0 {
		size, _ := triton.ElementSize(in.GetDatatype())
		if per := elements * int64(size); per > 0 {
			shape[variable] = int64(len(data)) / per
		} else {
			shape[variable] = 0
		}
	}
	req.Proto.Inputs = []*tritonpb.ModelInferRequest_InferInputTensor{{Name: in.GetName(), Datatype: in.GetDatatype(), Shape: shape}}
	req.Proto.RawInputContents = [][]byte{data}
	return nil
}

// JSONOutputsFit refuses a request that asks for an FP16 or BF16 output as
// JSON, which has no JSON form.
func JSONOutputsFit(m *pipeline.Model, req *tritonhttp.Request) error {
	asked := make(map[string]bool, len(req.Proto.GetOutputs()))
	for _, o := range req.Proto.GetOutputs() {
		asked[o.GetName()] = true
	}
	for _, o := range m.Metadata().GetOutputs() {
		if len(asked) > 0 && !asked[o.GetName()] {
			continue
		}
		if dt := o.GetDatatype(); (dt == "FP16" || dt == "BF16") && !req.WantsBinary(o.GetName()) {
			return fmt.Errorf("model %q: output %q is %s, which has no JSON form: ask for it as binary data", m.Name(), o.GetName(), dt)
		}
	}
	return nil
}
