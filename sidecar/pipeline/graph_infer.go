package pipeline

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/ensemble"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// inferGraph serves a request for a model of the graph form, whose
// preference is resolved. A request that gets no correction goes to the
// ensemble itself, so that its answer is Triton's, byte for byte; one
// that gets a correction runs the ensemble's steps (ensemble.Run), W_p
// applied to the graph's tensor as soon as its step has produced it.
func (m *Model) inferGraph(ctx context.Context, up *Upstream, in *tritonpb.ModelInferRequest, params map[string]*tritonpb.InferParameter, res *Result) error {
	if !res.Choice.Corrects() {
		return m.forward(ctx, up, in, params, res)
	}
	rows, err := m.checkInputs(in)
	if err != nil {
		return status.Errorf(codes.InvalidArgument, "model %q: %v", m.name, err)
	}
	wanted, err := m.graphOutputs(in.GetOutputs())
	if err != nil {
		return status.Errorf(codes.InvalidArgument, "model %q: %v", m.name, err)
	}
	res.Rows = rows
	start := time.Now()
	w, err := m.profile.Matrix(ctx, res.Choice)
	if err != nil {
		return m.matrixError(ctx, res.Choice, err)
	}
	solved := time.Since(start)
	inputs, err := m.graphInputs(in)
	if err != nil {
		return err
	}
	buf := getBuffers()
	defer putBuffers(buf)
	c := &corrector{m: m, w: w, buf: buf}
	run := &ensemble.Run{
		Graph:      m.graph,
		ID:         in.GetId(),
		Parameters: params,
		Inputs:     inputs,
		Outputs:    wanted,
		Call: func(ctx context.Context, step int, req *tritonpb.ModelInferRequest) (*tritonpb.ModelInferResponse, error) {
			ctx, cancel := up.callCtx(ctx)
			defer cancel()
			resp, err := up.RPC.ModelInfer(ctx, req)
			if err != nil {
				return nil, m.upstreamError(up, fmt.Sprintf("ensemble step %d", step), stepRef(m.graph.Steps[step]), err)
			}
			return resp, nil
		},
		Tensor: m.site.Tensor,
		Hook:   c.correct,
	}
	start = time.Now()
	tensors, err := run.Do(ctx)
	if err != nil {
		if _, ok := status.FromError(err); !ok {
			err = status.Errorf(codes.Internal, "model %q: %v", m.name, err)
		}
		return err
	}
	if c.done.IsZero() {
		// The outputs asked for do not depend on the corrected tensor.
		c.done = start
	}
	res.Timing = Timing{Backbone: c.done.Sub(start) - c.took, Correction: solved + c.took, Heads: time.Since(c.done)}
	res.Response, err = m.graphResponse(in, res.Choice, wanted, tensors)
	return err
}

// forward sends a request that gets no correction to the ensemble itself,
// with the client's inputs, requested outputs and id, its parameters less
// ReACT's own, and returns Triton's answer with the applied preference
// (none) and the arm added. Triton's errors reach the client as Triton
// gave them.
func (m *Model) forward(ctx context.Context, up *Upstream, in *tritonpb.ModelInferRequest, params map[string]*tritonpb.InferParameter, res *Result) error {
	req := &tritonpb.ModelInferRequest{
		ModelName:        m.ensemble,
		ModelVersion:     in.GetModelVersion(),
		Id:               in.GetId(),
		Parameters:       params,
		Inputs:           in.GetInputs(),
		Outputs:          in.GetOutputs(),
		RawInputContents: in.GetRawInputContents(),
	}
	ctx, cancel := up.callCtx(ctx)
	defer cancel()
	start := time.Now()
	resp, err := up.RPC.ModelInfer(ctx, req)
	if err != nil {
		if st := status.Convert(err); st.Code() == codes.Unavailable {
			return status.Errorf(codes.Unavailable, "model %q: upstream Triton %s: %s", m.name, up.Addr, st.Message())
		}
		return err
	}
	if resp.Parameters == nil {
		resp.Parameters = make(map[string]*tritonpb.InferParameter, 2)
	}
	setChoice(resp.Parameters, res.Choice)
	res.Response = resp
	res.Rows = 1
	if m.batching && len(in.GetInputs()) > 0 && len(in.GetInputs()[0].GetShape()) > 0 {
		res.Rows = int(in.GetInputs()[0].GetShape()[0])
	}
	res.Timing.Heads = time.Since(start)
	return nil
}

// graphInputs returns the request's inputs as the run's first tensors.
// Each must carry data: inputs in shared memory are refused.
func (m *Model) graphInputs(in *tritonpb.ModelInferRequest) (map[string]ensemble.Tensor, error) {
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
				return nil, status.Errorf(codes.InvalidArgument, "model %q: input %q: %v", m.name, t.GetName(), err)
			}
			x.Raw = c.Raw
		default:
			if _, shm := t.GetParameters()["shared_memory_region"]; shm {
				return nil, status.Errorf(codes.InvalidArgument, "model %q: input %q: inputs in shared memory are not served with a correction (the sidecar runs the ensemble's steps itself); send its data", m.name, t.GetName())
			}
		}
		out[t.GetName()] = x
	}
	return out, nil
}

// setChoice records the applied preference, and the arm when there is
// one, in a response's parameters.
func setChoice(params map[string]*tritonpb.InferParameter, c control.Choice) {
	params[control.KeyPreference] = &tritonpb.InferParameter{ParameterChoice: &tritonpb.InferParameter_StringParam{StringParam: c.Canonical()}}
	if c.Arm != "" {
		params[control.KeyArm] = &tritonpb.InferParameter{ParameterChoice: &tritonpb.InferParameter_StringParam{StringParam: c.Arm}}
	}
}

// graphOutputs resolves the outputs a request asks for; none means every
// output of the ensemble, in the order of its metadata. An output's
// parameters (classification) go to the step that produces it; outputs in
// shared memory are refused, since the sidecar holds the data.
func (m *Model) graphOutputs(outs []*tritonpb.ModelInferRequest_InferRequestedOutputTensor) ([]ensemble.Output, error) {
	if len(outs) == 0 {
		all := make([]ensemble.Output, len(m.order))
		for i, name := range m.order {
			all[i] = ensemble.Output{Name: name}
		}
		return all, nil
	}
	wanted := make([]ensemble.Output, 0, len(outs))
	for _, o := range outs {
		name := o.GetName()
		known := false
		for _, n := range m.order {
			known = known || n == name
		}
		if !known {
			return nil, fmt.Errorf("unknown output %q (outputs: %s)", name, strings.Join(m.order, ", "))
		}
		for _, w := range wanted {
			if w.Name == name {
				return nil, fmt.Errorf("output %q requested more than once", name)
			}
		}
		for k := range o.GetParameters() {
			if strings.HasPrefix(k, "shared_memory_") {
				return nil, fmt.Errorf("output %q: outputs in shared memory are not served with a correction (the sidecar holds the data); ask for its data", name)
			}
		}
		if len(o.GetParameters()) > 0 && (name == m.site.Tensor || len(m.graph.Consumers(name)) > 0) {
			return nil, fmt.Errorf("output %q: its parameters (classification) are not served with a correction when another step reads it", name)
		}
		wanted = append(wanted, ensemble.Output{Name: name, Params: o.GetParameters()})
	}
	return wanted, nil
}

// corrector applies W_p to the graph's tensor, in pooled buffers, and
// records when and for how long.
type corrector struct {
	m   *Model
	w   *control.Matrix
	buf *buffers
	// done is when the corrected tensor was ready, and took how long
	// correcting it took.
	done time.Time
	took time.Duration
}

// correct applies W_p to every length-D row of the tensor step produced,
// in its own datatype. The result aliases the pooled buffers.
func (c *corrector) correct(step int, x ensemble.Tensor) (ensemble.Tensor, error) {
	m, g := c.m, c.m.graph
	start := time.Now()
	defer func() { c.done, c.took = time.Now(), time.Since(start) }()
	d := m.profile.D()
	if x.Datatype != m.featureType {
		return x, status.Errorf(codes.Internal, "model %q: ensemble %s returned %q as %s, not %s as at load time: reload the sidecar",
			m.name, g.Describe(step), m.feature, x.Datatype, m.featureType)
	}
	if len(x.Shape) == 0 || x.Shape[len(x.Shape)-1] != int64(d) {
		return x, status.Errorf(codes.Internal, "model %q: ensemble %s returned %q of shape %s; the components file has D=%d",
			m.name, g.Describe(step), m.feature, triton.FormatShape(x.Shape), d)
	}
	b := c.buf
	var err error
	if b.z, err = triton.DecodeFloat32(b.z[:0], x.Datatype, x.Raw); err != nil {
		return x, status.Errorf(codes.Internal, "model %q: decoding %q: %v", m.name, m.site.Tensor, err)
	}
	b.zhat = grow(b.zhat, len(b.z))
	if err := c.w.Apply(b.zhat, b.z); err != nil {
		return x, status.Errorf(codes.Internal, "model %q: %v", m.name, err)
	}
	k := triton.FeatureIndex(x.Datatype)
	if b.enc[k], err = triton.EncodeFloat32(b.enc[k][:0], x.Datatype, b.zhat); err != nil {
		return x, status.Errorf(codes.Internal, "model %q: encoding %q as %s: %v", m.name, m.site.Tensor, x.Datatype, err)
	}
	x.Raw = b.enc[k]
	return x, nil
}

// graphResponse assembles the answer: the outputs asked for under the
// ensemble's names, as the steps produced them (the corrected tensor
// corrected, and copied out of the pooled buffers), the applied
// preference, and the sequence parameters Triton's ensembles answer with.
func (m *Model) graphResponse(in *tritonpb.ModelInferRequest, c control.Choice, wanted []ensemble.Output, tensors map[string]ensemble.Tensor) (*tritonpb.ModelInferResponse, error) {
	resp := &tritonpb.ModelInferResponse{
		ModelName:         m.name,
		ModelVersion:      m.version,
		Id:                in.GetId(),
		Parameters:        make(map[string]*tritonpb.InferParameter, 5),
		Outputs:           make([]*tritonpb.ModelInferResponse_InferOutputTensor, 0, len(wanted)),
		RawOutputContents: make([][]byte, 0, len(wanted)),
	}
	setChoice(resp.Parameters, c)
	sequenceParameters(resp.Parameters, in.GetParameters())
	for _, w := range wanted {
		t, ok := tensors[w.Name]
		if !ok {
			return nil, status.Errorf(codes.Internal, "model %q: ensemble %q returned no output %q", m.name, m.ensemble, w.Name)
		}
		if w.Name == m.site.Tensor {
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
