package faketriton

import (
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// ComputeFunc computes a model's outputs, by name, from its inputs, by
// name. Tensors carry their own datatype and shape.
type ComputeFunc func(in map[string]triton.Tensor) (map[string]triton.Tensor, error)

// Func returns a model of any inputs and outputs that computes with f. A
// request is checked as Triton checks it: every input is one of the
// model's, of its datatype and rank, with a batch dimension from 1 to
// maxBatch when the model batches (maxBatch > 0), every input that is not
// optional is present, data come raw or typed, and the outputs asked for
// exist. The response holds the outputs asked for (every output when
// none), in the order of outputs, raw; f must return each of them.
func Func(name string, maxBatch int32, inputs, outputs []Tensor, f ComputeFunc) *Model {
	m := &Model{Name: name, MaxBatchSize: maxBatch, Inputs: inputs, Outputs: outputs}
	m.Infer = func(req *tritonpb.ModelInferRequest) (*tritonpb.ModelInferResponse, error) {
		in, err := m.decodeInputs(req)
		if err != nil {
			return nil, err
		}
		var wanted []string
		for _, o := range req.GetOutputs() {
			if !slices.ContainsFunc(outputs, func(t Tensor) bool { return t.Name == o.GetName() }) {
				return nil, status.Errorf(codes.InvalidArgument, "unexpected inference output '%s' for model '%s'", o.GetName(), name)
			}
			wanted = append(wanted, o.GetName())
		}
		out, err := f(in)
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "%s: %v", name, err)
		}
		resp := &tritonpb.ModelInferResponse{}
		for _, o := range outputs {
			if len(wanted) > 0 && !slices.Contains(wanted, o.Name) {
				continue
			}
			t, ok := out[o.Name]
			if !ok {
				return nil, status.Errorf(codes.Internal, "%s: computed no output %q", name, o.Name)
			}
			resp.Outputs = append(resp.Outputs, &tritonpb.ModelInferResponse_InferOutputTensor{Name: o.Name, Datatype: t.Datatype, Shape: t.Shape})
			resp.RawOutputContents = append(resp.RawOutputContents, t.Raw)
		}
		return resp, nil
	}
	return m
}

// decodeInputs checks a request's inputs against the model's and returns
// them by name.
func (m *Model) decodeInputs(req *tritonpb.ModelInferRequest) (map[string]triton.Tensor, error) {
	raw := req.GetRawInputContents()
	if len(raw) != 0 && len(raw) != len(req.GetInputs()) {
		return nil, status.Errorf(codes.InvalidArgument, "%s: %d raw contents for %d inputs", m.Name, len(raw), len(req.GetInputs()))
	}
	in := make(map[string]triton.Tensor, len(req.GetInputs()))
	for i, t := range req.GetInputs() {
		j := slices.IndexFunc(m.Inputs, func(x Tensor) bool { return x.Name == t.GetName() })
		if j < 0 {
			return nil, status.Errorf(codes.InvalidArgument, "unexpected inference input '%s' for model '%s'", t.GetName(), m.Name)
		}
		want := m.Inputs[j]
		shape := t.GetShape()
		if t.GetDatatype() != want.Datatype || len(shape) != len(want.Shape) {
			return nil, status.Errorf(codes.InvalidArgument, "%s: input '%s' is %s %v, want %s %v", m.Name, t.GetName(), t.GetDatatype(), shape, want.Datatype, want.Shape)
		}
		if m.MaxBatchSize > 0 && (shape[0] < 1 || shape[0] > int64(m.MaxBatchSize)) {
			return nil, status.Errorf(codes.InvalidArgument, "%s: input '%s' has batch size %d, want 1 to %d", m.Name, t.GetName(), shape[0], m.MaxBatchSize)
		}
		var x triton.Tensor
		switch {
		case len(raw) > 0:
			x = triton.Tensor{Name: t.GetName(), Datatype: t.GetDatatype(), Shape: shape, Raw: raw[i]}
		case t.GetContents() != nil:
			var err error
			if x, err = triton.FromContents(t.GetName(), t.GetDatatype(), shape, t.GetContents()); err != nil {
				return nil, status.Errorf(codes.InvalidArgument, "%s: %v", m.Name, err)
			}
		default:
			return nil, status.Errorf(codes.InvalidArgument, "%s: input '%s' has no data", m.Name, t.GetName())
		}
		in[t.GetName()] = x
	}
	for _, want := range m.Inputs {
		if _, ok := in[want.Name]; !ok && !want.Optional {
			return nil, status.Errorf(codes.InvalidArgument, "expected %d inputs but got %d inputs for model '%s'", len(m.Inputs), len(in), m.Name)
		}
	}
	return in, nil
}
