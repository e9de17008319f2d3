package triton

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/triton/tritonpb"
)

// InferRequest is one inference request.
type InferRequest struct {
	Model   string
	Version string // empty lets the server choose
	ID      string // echoed in the response
	Inputs  []Tensor
	// Outputs names the outputs to return; empty returns them all.
	Outputs []string
	// Parameters are request parameters, passed through: see ToParameters
	// for the value types.
	Parameters map[string]any
	// Typed sends the inputs as typed contents instead of
	// raw_input_contents. FP16 and BF16 inputs cannot be sent this way.
	Typed bool
}

// InferResponse is the result of an inference request.
type InferResponse struct {
	Model      string
	Version    string
	ID         string
	Outputs    []Tensor
	Parameters map[string]any
}

// Output returns the output tensor with the given name.
func (r *InferResponse) Output(name string) (Tensor, bool) {
	for _, t := range r.Outputs {
		if t.Name == name {
			return t, true
		}
	}
	return Tensor{}, false
}

// Infer validates req against the model's metadata (unless the client was
// dialed WithoutValidation), sends it, and decodes the response, whether its
// outputs come as raw_output_contents or as typed contents. It is never
// retried. A request that does not fit the model fails with
// INVALID_ARGUMENT without being sent. A server error that says the model
// changed (NOT_FOUND, UNAVAILABLE, FAILED_PRECONDITION, or INVALID_ARGUMENT
// for a request that passed validation) drops the model's cached metadata,
// so the next request validates against fresh metadata.
func (c *Client) Infer(ctx context.Context, req *InferRequest) (*InferResponse, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	if c.opts.validate {
		if err := c.validate(ctx, req); err != nil {
			return nil, err
		}
	}
	pb, err := req.Proto()
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "model %q: %v", req.Model, err)
	}
	resp, err := c.rpc.ModelInfer(ctx, pb)
	if err != nil {
		c.forgetIfStale(req.Model, err, true)
		return nil, c.wrap(opName("ModelInfer", req.Model, req.Version), err)
	}
	out, err := DecodeInferResponse(resp)
	if err != nil {
		return nil, &Error{Addr: c.addr, Op: opName("ModelInfer", req.Model, req.Version), Code: codes.Internal, Err: err}
	}
	return out, nil
}

// validate checks req against the cached metadata of its model. The model
// configuration is fetched only when an input is missing, to learn whether
// it is optional.
func (c *Client) validate(ctx context.Context, req *InferRequest) error {
	meta, err := c.modelMetadata(ctx, req.Model, req.Version)
	if err != nil {
		return err
	}
	optional := func(input string) bool {
		cfg, err := c.modelConfig(ctx, req.Model, req.Version)
		if err != nil { // no configuration (e.g. not Triton): the input is required
			return false
		}
		for _, in := range cfg.GetInput() {
			if in.GetName() == input {
				return in.GetOptional()
			}
		}
		return false
	}
	return ValidateInputs(meta, req.Model, req.Inputs, req.Outputs, optional)
}

// Proto builds the protocol message of the request: inputs as
// raw_input_contents, or as typed contents when r.Typed is set.
func (r *InferRequest) Proto() (*tritonpb.ModelInferRequest, error) {
	params, err := ToParameters(r.Parameters)
	if err != nil {
		return nil, err
	}
	pb := &tritonpb.ModelInferRequest{
		ModelName:    r.Model,
		ModelVersion: r.Version,
		Id:           r.ID,
		Parameters:   params,
		Inputs:       make([]*tritonpb.ModelInferRequest_InferInputTensor, len(r.Inputs)),
	}
	if !r.Typed {
		pb.RawInputContents = make([][]byte, len(r.Inputs))
	}
	for i, t := range r.Inputs {
		in := &tritonpb.ModelInferRequest_InferInputTensor{Name: t.Name, Datatype: t.Datatype, Shape: t.Shape}
		if r.Typed {
			if in.Contents, err = ToContents(t); err != nil {
				return nil, err
			}
		} else {
			pb.RawInputContents[i] = t.Raw
		}
		pb.Inputs[i] = in
	}
	for _, name := range r.Outputs {
		pb.Outputs = append(pb.Outputs, &tritonpb.ModelInferRequest_InferRequestedOutputTensor{Name: name})
	}
	return pb, nil
}

// DecodeInferResponse converts a response message. Each output's data comes
// from raw_output_contents at the same index when the response has them
// (Triton's way), or else from the output's typed contents.
func DecodeInferResponse(pb *tritonpb.ModelInferResponse) (*InferResponse, error) {
	raw := pb.GetRawOutputContents()
	if len(raw) != 0 && len(raw) != len(pb.GetOutputs()) {
		return nil, fmt.Errorf("response has %d raw output contents for %d outputs", len(raw), len(pb.GetOutputs()))
	}
	r := &InferResponse{
		Model:      pb.GetModelName(),
		Version:    pb.GetModelVersion(),
		ID:         pb.GetId(),
		Outputs:    make([]Tensor, len(pb.GetOutputs())),
		Parameters: FromParameters(pb.GetParameters()),
	}
	for i, o := range pb.GetOutputs() {
		t, err := outputAt(pb, i)
		if err != nil {
			return nil, fmt.Errorf("output %q: %w", o.GetName(), err)
		}
		if KnownDatatype(t.Datatype) {
			n, err := NumElements(t.Shape)
			if err != nil {
				return nil, fmt.Errorf("output %q: %w", t.Name, err)
			}
			if err := checkData(t, n); err != nil {
				return nil, fmt.Errorf("output %q: %w", t.Name, err)
			}
		}
		r.Outputs[i] = t
	}
	return r, nil
}

// outputAt returns output i of a response with its data: the raw output
// contents at the same index when the response has them, or else the
// output's typed contents as raw bytes; no data when it has neither.
func outputAt(pb *tritonpb.ModelInferResponse, i int) (Tensor, error) {
	o := pb.GetOutputs()[i]
	t := Tensor{Name: o.GetName(), Datatype: o.GetDatatype(), Shape: o.GetShape()}
	switch raw := pb.GetRawOutputContents(); {
	case len(raw) != 0:
		t.Raw = raw[i]
	case o.GetContents() != nil:
		return FromContents(o.GetName(), o.GetDatatype(), o.GetShape(), o.GetContents())
	}
	return t, nil
}

// Rows returns the response's output called name for rows samples,
// decoded to float32 (FP32, FP16, BF16 or FP64), with the number of values
// per sample.
func (r *InferResponse) Rows(name string, rows int) ([]float32, int, error) {
	o, ok := r.Output(name)
	if !ok {
		return nil, 0, fmt.Errorf("the response has no output %q", name)
	}
	v, err := o.AsFloat32()
	if err != nil {
		return nil, 0, fmt.Errorf("output %q: %w", name, err)
	}
	if rows <= 0 || len(v)%rows != 0 {
		return nil, 0, fmt.Errorf("output %q has %d values for %d samples", name, len(v), rows)
	}
	return v, len(v) / rows, nil
}

// ResponseOutput returns the output called name of a response message,
// its data as raw bytes whether it came raw or typed, checked against its
// datatype and shape: the one output a caller needs, without decoding the
// others (DecodeInferResponse decodes them all).
func ResponseOutput(pb *tritonpb.ModelInferResponse, name string) (Tensor, error) {
	raw := pb.GetRawOutputContents()
	for i, o := range pb.GetOutputs() {
		if o.GetName() != name {
			continue
		}
		if len(raw) != len(pb.GetOutputs()) && (len(raw) != 0 || o.GetContents() == nil) {
			return Tensor{}, fmt.Errorf("output %q has no data", name)
		}
		t, err := outputAt(pb, i)
		if err != nil {
			return t, err
		}
		n, err := NumElements(t.Shape)
		if err != nil {
			return t, fmt.Errorf("output %q: %w", name, err)
		}
		if err := CheckData(t.Datatype, t.Shape, n, t.Raw); err != nil {
			return t, fmt.Errorf("output %q: %w", name, err)
		}
		return t, nil
	}
	return Tensor{}, fmt.Errorf("response has no output %q", name)
}
