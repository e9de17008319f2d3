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
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// inferGraph serves a request for a model of the graph form, whose
// preference is resolved. A request that gets no correction goes to the
// ensemble itself, so that its answer is Triton's, byte for byte; one
// that gets a correction runs the ensemble's steps (runGraph).
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
	r := &graphRun{m: m, up: up, in: in, params: params, w: w, wanted: wanted}
	if err := r.inputs(); err != nil {
		return err
	}
	buf := getBuffers()
	defer putBuffers(buf)
	r.buf = buf
	start = time.Now()
	if err := r.run(ctx); err != nil {
		return err
	}
	if r.corrected.IsZero() {
		// The outputs asked for do not depend on the corrected tensor.
		r.corrected = start
	}
	res.Timing = Timing{Backbone: r.corrected.Sub(start) - r.correction, Correction: solved + r.correction, Heads: time.Since(r.corrected)}
	res.Response, err = r.response(res.Choice)
	return err
}

// forward sends a request that gets no correction to the ensemble itself,
// with the client's inputs, requested outputs and id, its parameters less
// ReACT's own, and returns Triton's answer with the applied preference
// (none) and the arm added. Triton's errors reach the client as Triton
// gave them.
func (m *Model) forward(ctx context.Context, up *Upstream, in *tritonpb.ModelInferRequest, params map[string]*tritonpb.InferParameter, res *Result) error {
	req := &tritonpb.ModelInferRequest{
		ModelName:        m.graph.ensemble,
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
func (m *Model) graphOutputs(outs []*tritonpb.ModelInferRequest_InferRequestedOutputTensor) ([]graphOutput, error) {
	if len(outs) == 0 {
		all := make([]graphOutput, len(m.order))
		for i, name := range m.order {
			all[i] = graphOutput{name: name}
		}
		return all, nil
	}
	wanted := make([]graphOutput, 0, len(outs))
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
			if w.name == name {
				return nil, fmt.Errorf("output %q requested more than once", name)
			}
		}
		for k := range o.GetParameters() {
			if strings.HasPrefix(k, "shared_memory_") {
				return nil, fmt.Errorf("output %q: outputs in shared memory are not served with a correction (the sidecar holds the data); ask for its data", name)
			}
		}
		if len(o.GetParameters()) > 0 && (name == m.graph.correct || len(m.graph.consumers[name]) > 0) {
			return nil, fmt.Errorf("output %q: its parameters (classification) are not served with a correction when another step reads it", name)
		}
		wanted = append(wanted, graphOutput{name: name, params: o.GetParameters()})
	}
	return wanted, nil
}

// tensor is one tensor of a graph run: a client's input or a step's
// output, its data raw.
type tensor struct {
	datatype string
	shape    []int64
	raw      []byte
	// params are a client input's parameters, passed on to the steps that
	// read it.
	params map[string]*tritonpb.InferParameter
}

// graphRun is one request's run of a model's graph.
type graphRun struct {
	m      *Model
	up     *Upstream
	in     *tritonpb.ModelInferRequest
	params map[string]*tritonpb.InferParameter
	w      *control.Matrix
	wanted []graphOutput
	buf    *buffers

	// tensors holds every tensor available so far, by its name in the
	// ensemble. Only run's goroutine touches it.
	tensors map[string]tensor
	// corrected is when the corrected tensor was ready, and correction how
	// long correcting it took.
	corrected  time.Time
	correction time.Duration
}

// inputs makes the client's inputs the run's first tensors. Each must
// carry data: inputs in shared memory are refused.
func (r *graphRun) inputs() error {
	in := r.in
	r.tensors = make(map[string]tensor, len(in.GetInputs())+len(r.m.graph.producer))
	raw := in.GetRawInputContents()
	for i, t := range in.GetInputs() {
		x := tensor{datatype: t.GetDatatype(), shape: t.GetShape(), params: t.GetParameters()}
		switch {
		case len(raw) > 0:
			x.raw = raw[i]
		case t.GetContents() != nil:
			c, err := triton.FromContents(t.GetName(), t.GetDatatype(), t.GetShape(), t.GetContents())
			if err != nil {
				return status.Errorf(codes.InvalidArgument, "model %q: input %q: %v", r.m.name, t.GetName(), err)
			}
			x.raw = c.Raw
		default:
			if _, shm := t.GetParameters()["shared_memory_region"]; shm {
				return status.Errorf(codes.InvalidArgument, "model %q: input %q: inputs in shared memory are not served with a correction (the sidecar runs the ensemble's steps itself); send its data", r.m.name, t.GetName())
			}
		}
		r.tensors[t.GetName()] = x
	}
	return nil
}

// stepResult is a step's answer.
type stepResult struct {
	step int
	resp *tritonpb.ModelInferResponse
	err  error
}

// run runs the steps that produce the wanted outputs, each as soon as the
// tensors it reads are ready (so independent steps run at the same time),
// correcting the graph's tensor as soon as its step has produced it. The
// first step that fails stops the run: the others are cancelled, and its
// error, with Triton's status code, is returned.
func (r *graphRun) run(ctx context.Context) error {
	g := r.m.graph
	names := make([]string, len(r.wanted))
	for i, w := range r.wanted {
		names[i] = w.name
	}
	need := g.needed(names)
	pending := make([]int, len(g.steps))
	for i := range g.steps {
		if need[i] {
			pending[i] = len(g.dependencies(i))
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make(chan stepResult, len(g.steps))
	running := 0
	launch := func(i int) {
		req := r.stepRequest(i, need)
		running++
		go func() {
			cctx, cancel := r.up.callCtx(ctx)
			defer cancel()
			resp, err := r.up.RPC.ModelInfer(cctx, req)
			results <- stepResult{step: i, resp: resp, err: err}
		}()
	}
	for i := range g.steps {
		if need[i] && pending[i] == 0 {
			launch(i)
		}
	}
	var first error
	for running > 0 {
		res := <-results
		running--
		if first != nil {
			continue
		}
		if res.err == nil {
			res.err = r.store(res)
		} else {
			res.err = r.m.upstreamError(r.up, "ensemble "+g.describe(res.step), g.steps[res.step].ref, res.err)
		}
		if res.err != nil {
			first = res.err
			cancel()
			continue
		}
		for _, b := range g.steps[res.step].out {
			for _, c := range g.consumers[b.tensor] {
				if !need[c] {
					continue
				}
				if pending[c]--; pending[c] == 0 {
					launch(c)
				}
			}
		}
	}
	return first
}

// stepRequest is the request for step i: the tensors it reads under its
// own input names (an optional input of the ensemble the client left out
// is left out), the client's id and parameters (as Triton passes an
// ensemble's parameters to every step), and the outputs the run needs,
// with the client's parameters for those it asked for.
func (r *graphRun) stepRequest(i int, need []bool) *tritonpb.ModelInferRequest {
	g := r.m.graph
	s := g.steps[i]
	req := &tritonpb.ModelInferRequest{ModelName: s.model, ModelVersion: s.version, Id: r.in.GetId(), Parameters: r.params}
	for _, b := range s.in {
		t, ok := r.tensors[b.tensor]
		if !ok {
			continue
		}
		req.Inputs = append(req.Inputs, &tritonpb.ModelInferRequest_InferInputTensor{Name: b.name, Datatype: t.datatype, Shape: t.shape, Parameters: t.params})
		req.RawInputContents = append(req.RawInputContents, t.raw)
	}
	for _, b := range s.out {
		used := false
		for _, c := range g.consumers[b.tensor] {
			used = used || need[c]
		}
		var params map[string]*tritonpb.InferParameter
		for _, w := range r.wanted {
			if w.name == b.tensor {
				used, params = true, w.params
			}
		}
		if used {
			req.Outputs = append(req.Outputs, &tritonpb.ModelInferRequest_InferRequestedOutputTensor{Name: b.name, Parameters: params})
		}
	}
	return req
}

// store keeps the outputs of a step's answer as tensors of the ensemble,
// correcting the graph's tensor when this step produced it.
func (r *graphRun) store(res stepResult) error {
	g := r.m.graph
	s := g.steps[res.step]
	for _, o := range res.resp.GetOutputs() {
		for _, b := range s.out {
			if b.name != o.GetName() {
				continue
			}
			t, err := outputTensor(res.resp, b.name)
			if err != nil {
				return status.Errorf(codes.Internal, "model %q: ensemble %s: %v", r.m.name, g.describe(res.step), err)
			}
			x := tensor{datatype: t.Datatype, shape: t.Shape, raw: t.Raw}
			if b.tensor == g.correct {
				if x, err = r.correct(res.step, x); err != nil {
					return err
				}
			}
			r.tensors[b.tensor] = x
		}
	}
	return nil
}

// correct applies W_p to every length-D row of the tensor step produced,
// in its own datatype.
func (r *graphRun) correct(step int, x tensor) (tensor, error) {
	m, g := r.m, r.m.graph
	start := time.Now()
	defer func() { r.corrected, r.correction = time.Now(), time.Since(start) }()
	d := m.profile.D()
	if x.datatype != m.featureType {
		return x, status.Errorf(codes.Internal, "model %q: ensemble %s returned %q as %s, not %s as at load time: reload the sidecar",
			m.name, g.describe(step), m.feature, x.datatype, m.featureType)
	}
	if len(x.shape) == 0 || x.shape[len(x.shape)-1] != int64(d) {
		return x, status.Errorf(codes.Internal, "model %q: ensemble %s returned %q of shape %s; the components file has D=%d",
			m.name, g.describe(step), m.feature, triton.FormatShape(x.shape), d)
	}
	b := r.buf
	var err error
	if b.z, err = triton.DecodeFloat32(b.z[:0], x.datatype, x.raw); err != nil {
		return x, status.Errorf(codes.Internal, "model %q: decoding %q: %v", m.name, g.correct, err)
	}
	b.zhat = grow(b.zhat, len(b.z))
	if err := r.w.Apply(b.zhat, b.z); err != nil {
		return x, status.Errorf(codes.Internal, "model %q: %v", m.name, err)
	}
	k := 0
	for i, dt := range floatTypes {
		if dt == x.datatype {
			k = i
		}
	}
	if b.enc[k], err = triton.EncodeFloat32(b.enc[k][:0], x.datatype, b.zhat); err != nil {
		return x, status.Errorf(codes.Internal, "model %q: encoding %q as %s: %v", m.name, g.correct, x.datatype, err)
	}
	x.raw = b.enc[k]
	return x, nil
}

// response assembles the answer: the wanted outputs under the ensemble's
// names, as the steps produced them (the corrected tensor corrected, and
// copied out of the pooled buffers), the applied preference, and the
// sequence parameters Triton's ensembles answer with.
func (r *graphRun) response(c control.Choice) (*tritonpb.ModelInferResponse, error) {
	resp := &tritonpb.ModelInferResponse{
		ModelName:         r.m.name,
		ModelVersion:      r.m.version,
		Id:                r.in.GetId(),
		Parameters:        make(map[string]*tritonpb.InferParameter, 2),
		Outputs:           make([]*tritonpb.ModelInferResponse_InferOutputTensor, 0, len(r.wanted)),
		RawOutputContents: make([][]byte, 0, len(r.wanted)),
	}
	setChoice(resp.Parameters, c)
	sequenceParameters(resp.Parameters, r.in.GetParameters())
	for _, w := range r.wanted {
		t, ok := r.tensors[w.name]
		if !ok {
			return nil, status.Errorf(codes.Internal, "model %q: ensemble %s returned no output for %q",
				r.m.name, r.m.graph.describe(r.m.graph.producer[w.name]), w.name)
		}
		if w.name == r.m.graph.correct {
			t.raw = append([]byte(nil), t.raw...)
		}
		resp.Outputs = append(resp.Outputs, &tritonpb.ModelInferResponse_InferOutputTensor{Name: w.name, Datatype: t.datatype, Shape: t.shape})
		resp.RawOutputContents = append(resp.RawOutputContents, t.raw)
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
