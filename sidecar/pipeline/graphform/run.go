package graphform

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/ensemble"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// Outputs resolves the outputs a request asks for; none means every
// output of the ensemble, in the order of its metadata. An output's
// parameters (classification) go to the step that produces it; outputs in
// shared memory, and the classification of a BYTES output (which crashes
// Triton 2.51 when asked of the step), are refused.
func (f *Form) Outputs(outs []*tritonpb.ModelInferRequest_InferRequestedOutputTensor) ([]ensemble.Output, error) {
	order := f.ens.outputs
	if len(outs) == 0 {
		all := make([]ensemble.Output, len(order))
		for i, name := range order {
			all[i] = ensemble.Output{Name: name}
		}
		return all, nil
	}
	wanted := make([]ensemble.Output, 0, len(outs))
	for _, o := range outs {
		name := o.GetName()
		if !slices.Contains(order, name) {
			return nil, fmt.Errorf("unknown output %q (outputs: %s)", name, strings.Join(order, ", "))
		}
		if slices.ContainsFunc(wanted, func(w ensemble.Output) bool { return w.Name == name }) {
			return nil, fmt.Errorf("output %q requested more than once", name)
		}
		for k := range o.GetParameters() {
			if strings.HasPrefix(k, "shared_memory_") {
				return nil, fmt.Errorf("output %q: outputs in shared memory are not served with a correction (the sidecar holds the data); ask for its data", name)
			}
		}
		if _, ok := o.GetParameters()["classification"]; ok && f.ens.bytes[name] {
			// Triton's ensemble refuses it (INVALID_ARGUMENT); asked of the
			// step's model, Triton 2.51 crashes.
			return nil, fmt.Errorf("output %q: classification of a BYTES output is not supported; ask for its data", name)
		}
		if len(o.GetParameters()) > 0 && (name == f.ens.site.Tensor || len(f.ens.graph.Consumers(name)) > 0) {
			return nil, fmt.Errorf("output %q: its parameters (classification) are not served with a correction when another step reads it", name)
		}
		wanted = append(wanted, ensemble.Output{Name: name, Params: o.GetParameters()})
	}
	return wanted, nil
}

// Request is one request served with a correction.
type Request struct {
	// Proto is the client's request, its inputs checked against the
	// ensemble's. Run does not modify it.
	Proto *tritonpb.ModelInferRequest
	// Parameters are given to every step: the request's, less ReACT's
	// own.
	Parameters map[string]*tritonpb.InferParameter
	// Outputs are the outputs asked for (Form.Outputs).
	Outputs []ensemble.Output
	// W is W_p, applied to every row of the corrected tensor.
	W *control.Matrix
	// Call sends step's request to its model. Its error fails the run as
	// it is, when it is a gRPC status.
	Call func(ctx context.Context, step int, req *tritonpb.ModelInferRequest) (*tritonpb.ModelInferResponse, error)
}

// Timing splits the time of a run that succeeded.
type Timing struct {
	// Before is the steps until the corrected tensor was ready, Correction
	// correcting it, and After the steps after (all of them when the
	// outputs asked for do not depend on the tensor).
	Before, Correction, After time.Duration
}

// Run serves a request with a correction: it runs the ensemble's steps
// that the outputs asked for need (ensemble.Run: each step as soon as the
// tensors it reads are ready), applies W_p to the tensor as soon as its
// step has produced it, in pooled buffers, and returns the answer: the
// outputs under the ensemble's names, the request's id, and the sequence
// parameters Triton's ensembles answer with.
//
// Errors are gRPC status errors: INVALID_ARGUMENT for an input in shared
// memory or typed contents that do not fit, Call's own status for a failed
// step, INTERNAL for the rest, naming the model.
func (f *Form) Run(ctx context.Context, req Request) (*tritonpb.ModelInferResponse, Timing, error) {
	inputs, err := f.inputs(req.Proto)
	if err != nil {
		return nil, Timing{}, err
	}
	buf := scratchPool.Get().(*scratch)
	defer scratchPool.Put(buf)
	c := &corrector{f: f, w: req.W, buf: buf}
	run := &ensemble.Run{
		Graph:      f.ens.graph,
		ID:         req.Proto.GetId(),
		Parameters: req.Parameters,
		Inputs:     inputs,
		Outputs:    req.Outputs,
		Call:       req.Call,
		Tensor:     f.ens.site.Tensor,
		Hook:       c.correct,
	}
	start := time.Now()
	tensors, err := run.Do(ctx)
	if err != nil {
		if _, ok := status.FromError(err); !ok {
			err = status.Errorf(codes.Internal, "model %q: %v", f.ens.name, err)
		}
		return nil, Timing{}, err
	}
	if c.done.IsZero() {
		// The outputs asked for do not depend on the corrected tensor.
		c.done = start
	}
	t := Timing{Before: c.done.Sub(start) - c.took, Correction: c.took, After: time.Since(c.done)}
	resp, err := f.response(req.Proto, req.Outputs, tensors)
	return resp, t, err
}

// inputs returns the request's inputs as the run's first tensors. Each
// must carry data: inputs in shared memory are refused.
func (f *Form) inputs(in *tritonpb.ModelInferRequest) (map[string]ensemble.Tensor, error) {
	out := make(map[string]ensemble.Tensor, len(in.GetInputs()))
	raw := in.GetRawInputContents()
	for i, t := range in.GetInputs() {
		x := ensemble.Tensor{Datatype: t.GetDatatype(), Shape: t.GetShape(), Params: t.GetParameters()}
		switch {
		case len(raw) > 0:
			x.Raw = raw[i]
		case t.GetContents() != nil:
			c, err := triton.FromContents(t.GetName(), t.GetDatatype(), t.GetShape(), t.GetContents())
			if err != nil {
				return nil, status.Errorf(codes.InvalidArgument, "model %q: input %q: %v", f.ens.name, t.GetName(), err)
			}
			x.Raw = c.Raw
		default:
			if _, shm := t.GetParameters()["shared_memory_region"]; shm {
				return nil, status.Errorf(codes.InvalidArgument, "model %q: input %q: inputs in shared memory are not served with a correction (the sidecar runs the ensemble's steps itself); send its data", f.ens.name, t.GetName())
			}
		}
		out[t.GetName()] = x
	}
	return out, nil
}

// scratch is the memory of one request's correction, pooled so that the
// steady state does not allocate.
type scratch struct {
	z, zhat []float32
	enc     []byte // the corrected tensor, in its own datatype
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// corrector applies W_p to the tensor, in pooled buffers, and records when
// and for how long.
type corrector struct {
	f   *Form
	w   *control.Matrix
	buf *scratch
	// done is when the corrected tensor was ready, and took how long
	// correcting it took.
	done time.Time
	took time.Duration
}

// correct applies W_p to every length-D row of the tensor step produced,
// in its own datatype. The result aliases the pooled buffers.
func (c *corrector) correct(step int, x ensemble.Tensor) (ensemble.Tensor, error) {
	e := &c.f.ens
	start := time.Now()
	defer func() { c.done, c.took = time.Now(), time.Since(start) }()
	if x.Datatype != c.f.datatype {
		return x, status.Errorf(codes.Internal, "model %q: ensemble %s returned %q as %s, not %s as at load time: reload the sidecar",
			e.name, e.graph.Describe(step), e.site.Output, x.Datatype, c.f.datatype)
	}
	if len(x.Shape) == 0 || x.Shape[len(x.Shape)-1] != int64(c.f.d) {
		return x, status.Errorf(codes.Internal, "model %q: ensemble %s returned %q of shape %s; the components file has D=%d",
			e.name, e.graph.Describe(step), e.site.Output, triton.FormatShape(x.Shape), c.f.d)
	}
	b := c.buf
	var err error
	if b.z, err = triton.DecodeFloat32(b.z[:0], x.Datatype, x.Raw); err != nil {
		return x, status.Errorf(codes.Internal, "model %q: decoding %q: %v", e.name, e.site.Tensor, err)
	}
	b.zhat = slices.Grow(b.zhat[:0], len(b.z))[:len(b.z)]
	if err := c.w.Apply(b.zhat, b.z); err != nil {
		return x, status.Errorf(codes.Internal, "model %q: %v", e.name, err)
	}
	if b.enc, err = triton.EncodeFloat32(b.enc[:0], x.Datatype, b.zhat); err != nil {
		return x, status.Errorf(codes.Internal, "model %q: encoding %q as %s: %v", e.name, e.site.Tensor, x.Datatype, err)
	}
	x.Raw = b.enc
	return x, nil
}

// response assembles the answer: the outputs asked for under the
// ensemble's names, as the steps produced them (the corrected tensor
// corrected, and copied out of the pooled buffers), and the sequence
// parameters Triton's ensembles answer with.
func (f *Form) response(in *tritonpb.ModelInferRequest, wanted []ensemble.Output, tensors map[string]ensemble.Tensor) (*tritonpb.ModelInferResponse, error) {
	resp := &tritonpb.ModelInferResponse{
		ModelName:         f.ens.name,
		ModelVersion:      f.ens.version,
		Id:                in.GetId(),
		Parameters:        make(map[string]*tritonpb.InferParameter, 5),
		Outputs:           make([]*tritonpb.ModelInferResponse_InferOutputTensor, 0, len(wanted)),
		RawOutputContents: make([][]byte, 0, len(wanted)),
	}
	sequenceParameters(resp.Parameters, in.GetParameters())
	for _, w := range wanted {
		t, ok := tensors[w.Name]
		if !ok {
			return nil, status.Errorf(codes.Internal, "model %q: ensemble %q returned no output %q", f.ens.name, f.ens.name, w.Name)
		}
		if w.Name == f.ens.site.Tensor {
			t.Raw = append([]byte(nil), t.Raw...)
		}
		resp.Outputs = append(resp.Outputs, &tritonpb.ModelInferResponse_InferOutputTensor{Name: w.Name, Datatype: t.Datatype, Shape: t.Shape})
		resp.RawOutputContents = append(resp.RawOutputContents, t.Raw)
	}
	return resp, nil
}

// sequenceParameters adds the parameters Triton's ensembles add to every
// response (2.51): the request's sequence_id, sequence_start and
// sequence_end, or 0, false and false.
func sequenceParameters(out, in map[string]*tritonpb.InferParameter) {
	defaults := map[string]*tritonpb.InferParameter{
		"sequence_id":    {ParameterChoice: &tritonpb.InferParameter_Int64Param{Int64Param: 0}},
		"sequence_start": {ParameterChoice: &tritonpb.InferParameter_BoolParam{BoolParam: false}},
		"sequence_end":   {ParameterChoice: &tritonpb.InferParameter_BoolParam{BoolParam: false}},
	}
	for k, def := range defaults {
		if p, ok := in[k]; ok {
			out[k] = p
		} else {
			out[k] = def
		}
	}
}
