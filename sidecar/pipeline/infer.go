package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/sidecar/pipeline/shadowcmp"
	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/modelinfo"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// Request is one inference request for a controllable model.
type Request struct {
	// Proto is the client's request. Infer does not modify it.
	Proto *tritonpb.ModelInferRequest
	// Header holds the preference keys of the request's headers or gRPC
	// metadata; the request's parameters are read from Proto.
	Header control.Values
}

// Timing splits the time of a request that succeeded. For a model of the
// graph form, Backbone is the steps until the corrected tensor is ready
// and Heads the steps after; a request forwarded to the ensemble (no
// correction) counts as Heads, its one call.
type Timing struct {
	Backbone   time.Duration // the backbone call
	Correction time.Duration // finding W_p, decoding, correcting, encoding
	Heads      time.Duration // the head calls (in parallel when several)
}

// Result is the answer to a request.
type Result struct {
	// Response is the answer, in Triton's message: the requested outputs
	// under the names the client knows, raw contents, and the applied
	// preference in the react-preference parameter (and the arm in
	// react-arm).
	Response *tritonpb.ModelInferResponse
	// Choice is the preference applied: where it came from, and the arm of
	// the model's experiment.
	Choice control.Choice
	// Rows is the number of feature rows (the batch size, when batching).
	Rows   int
	Timing Timing
	// Predictions are each head's top-1 class and confidence per row, for
	// a request served with an experiment's arm; nil otherwise.
	Predictions []Prediction
	// Feature is the backbone's feature of the served rows as Triton
	// returned it (datatype, shape, raw bytes; not copied), for live
	// sampling; empty for the graph form.
	Feature triton.Tensor
}

// Infer serves one request: it resolves the preference, checks the inputs
// against the backbone's, calls the backbone for the feature, corrects the
// whole batch with W_p in one pass, sends the corrected feature to each
// head that produces a requested output (in parallel), and assembles the
// response. ctx carries the deadline, cancellation and outgoing metadata of
// both Triton calls. The request id and the request's parameters, less
// ReACT's own, go to every call. The key of the model's experiment is
// read from req.Header and from the parameter the experiment names.
//
// Errors are gRPC status errors: INVALID_ARGUMENT for what the client got
// wrong (a bad preference, an unknown input or output, a shape, datatype or
// batch size that does not fit), NOT_FOUND for a version other than the
// model's (for the graph form: only with a correction; without one, any
// version goes to the ensemble, and Triton answers),
// Triton's own code for a failed call, prefixed with the model called, and
// UNAVAILABLE naming Triton's address when it cannot be reached. A request
// that fails after its preference was resolved also returns a Result, with
// only Choice set, so that the failure can be counted against its arm.
func (m *Model) Infer(ctx context.Context, up *Upstream, req Request) (*Result, error) {
	in := req.Proto
	other := !m.OwnVersion(in.GetModelVersion())
	if other && m.graph == nil {
		return nil, status.Errorf(codes.NotFound, "model %q has no version %s (the controllable model serves version %s)", m.name, in.GetModelVersion(), m.version)
	}
	params, prefParams, err := splitParameters(in.GetParameters(), m.keyParameter)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "model %q: %v", m.name, err)
	}
	choice, err := m.profile.Resolve(control.Request{Header: req.Header, Parameter: prefParams, Experiment: m.experiment})
	if err != nil {
		return nil, &causeError{st: status.Newf(codes.InvalidArgument, "model %q: %v", m.name, err), err: err}
	}
	if other && choice.Corrects() {
		// Another version of the ensemble passes through to Triton only
		// without a correction: the sidecar corrects the one it serves.
		return &Result{Choice: choice}, status.Errorf(codes.NotFound,
			"model %q: version %s takes no preference (the sidecar corrects version %s, the one Triton serves by default; send version %s or no version, or the preference none)",
			m.name, in.GetModelVersion(), m.version, m.version)
	}
	res := &Result{Choice: choice}
	serve := m.infer
	if m.graph != nil {
		serve = m.inferGraph
	}
	if err := serve(ctx, up, in, params, res); err != nil {
		return &Result{Choice: choice}, err
	}
	if m.graph != nil && m.shadow != nil && choice.Arm != "" && m.shadow.Draw() {
		m.shadow.Skip(m.name, shadowcmp.ReasonGraphForm) // not compared
	}
	return res, nil
}

// infer serves a request whose preference is resolved, filling in res.
func (m *Model) infer(ctx context.Context, up *Upstream, in *tritonpb.ModelInferRequest, params map[string]*tritonpb.InferParameter, res *Result) error {
	choice := res.Choice
	rows, err := m.checkInputs(in)
	if err != nil {
		return status.Errorf(codes.InvalidArgument, "model %q: %v", m.name, err)
	}
	wanted, err := m.requested(in.GetOutputs())
	if err != nil {
		return status.Errorf(codes.InvalidArgument, "model %q: %v", m.name, err)
	}
	res.Rows = rows

	// W_p first: a bad preference should fail before Triton is called.
	start := time.Now()
	w, err := m.profile.Matrix(ctx, choice)
	if err != nil {
		return m.matrixError(ctx, choice, err)
	}
	solved := time.Since(start)

	// The backbone.
	start = time.Now()
	feature, err := m.callBackbone(ctx, up, in, params, choice.Corrects())
	if err != nil {
		return err
	}
	res.Timing.Backbone = time.Since(start)
	res.Feature = triton.Tensor{Name: m.feature, Datatype: feature.datatype, Shape: feature.shape, Raw: feature.raw}

	// The correction, into pooled buffers.
	start = time.Now()
	buf := getBuffers()
	defer putBuffers(buf)
	heads, err := m.correct(buf, feature, w)
	if err != nil {
		return err
	}
	res.Timing.Correction = solved + time.Since(start)

	// The heads.
	start = time.Now()
	answers, err := m.callHeads(ctx, up, in, params, feature, heads, wanted)
	if err != nil {
		return err
	}
	res.Timing.Heads = time.Since(start)

	res.Response, err = m.assemble(in, choice, wanted, answers)
	if err != nil {
		return err
	}
	if choice.Arm != "" {
		var outs []output
		res.Predictions, outs = m.predictions(res.Response)
		if m.shadow != nil {
			m.startShadow(ctx, up, in.GetId(), choice.Arm, feature, res.Predictions, outs)
		}
	}
	return nil
}

// checkInputs checks the request's inputs against the backbone's and
// returns the batch size (1 when the model does not batch).
func (m *Model) checkInputs(in *tritonpb.ModelInferRequest) (int, error) {
	raw := in.GetRawInputContents()
	if len(raw) != 0 && len(raw) != len(in.GetInputs()) {
		return 0, fmt.Errorf("%d raw input contents for %d inputs: give one per input, or none "+
			"(a request to a controllable model cannot mix inputs in shared memory with inputs carrying data)", len(raw), len(in.GetInputs()))
	}
	seen := make(map[string]bool, len(in.GetInputs()))
	batch := -1
	for i, t := range in.GetInputs() {
		var want *tritonpb.ModelMetadataResponse_TensorMetadata
		for _, x := range m.inputs {
			if x.GetName() == t.GetName() {
				want = x
			}
		}
		if want == nil {
			return 0, fmt.Errorf("unknown input %q (inputs: %s)", t.GetName(), triton.TensorList(m.inputs))
		}
		if seen[t.GetName()] {
			return 0, fmt.Errorf("input %q given more than once", t.GetName())
		}
		seen[t.GetName()] = true
		if t.GetDatatype() != want.GetDatatype() {
			return 0, fmt.Errorf("input %q: datatype %s, the model takes %s", t.GetName(), t.GetDatatype(), want.GetDatatype())
		}
		shape := t.GetShape()
		if slices.ContainsFunc(shape, func(d int64) bool { return d < 0 }) {
			// As Triton says it: a request gives every dimension.
			return 0, fmt.Errorf("all input dimensions should be specified for input %q, got %s", t.GetName(), triton.FormatShape(shape))
		}
		if !shapeFits(shape, want.GetShape()) {
			return 0, fmt.Errorf("input %q: shape %s does not match %s", t.GetName(), triton.FormatShape(shape), triton.FormatShape(want.GetShape()))
		}
		n, err := triton.NumElements(shape)
		if err != nil {
			return 0, fmt.Errorf("input %q: %v", t.GetName(), err)
		}
		if m.batching {
			b := int(shape[0])
			switch {
			case b < 1:
				return 0, fmt.Errorf("input %q: batch size %d: want at least 1", t.GetName(), b)
			case b > m.maxBatch:
				return 0, fmt.Errorf("input %q: batch size %d exceeds the model's maximum of %d", t.GetName(), b, m.maxBatch)
			case batch >= 0 && b != batch:
				return 0, fmt.Errorf("input %q: batch size %d, but another input has %d", t.GetName(), b, batch)
			}
			batch = b
		}
		if len(raw) != 0 {
			if err := triton.CheckData(t.GetDatatype(), shape, n, raw[i]); err != nil {
				return 0, fmt.Errorf("input %q: %v", t.GetName(), err)
			}
		}
	}
	for _, x := range m.inputs {
		if !seen[x.GetName()] && !m.optional[x.GetName()] {
			return 0, fmt.Errorf("missing input %q (%s %s)", x.GetName(), x.GetDatatype(), triton.FormatShape(x.GetShape()))
		}
	}
	return max(batch, 1), nil
}

// shapeFits reports whether shape fits a metadata shape, where -1 matches
// any size.
func shapeFits(shape, pattern []int64) bool {
	if len(shape) != len(pattern) {
		return false
	}
	for i, d := range shape {
		if d < 0 || (pattern[i] >= 0 && d != pattern[i]) {
			return false
		}
	}
	return true
}

// wantedOutput is one output the client asked for.
type wantedOutput struct {
	client string
	output
	params map[string]*tritonpb.InferParameter
}

// requested resolves the requested outputs; none means all of them, in
// configuration order.
func (m *Model) requested(outs []*tritonpb.ModelInferRequest_InferRequestedOutputTensor) ([]wantedOutput, error) {
	if len(outs) == 0 {
		all := make([]wantedOutput, len(m.order))
		for i, name := range m.order {
			all[i] = wantedOutput{client: name, output: m.outputs[name]}
		}
		return all, nil
	}
	wanted := make([]wantedOutput, 0, len(outs))
	seen := make(map[string]bool, len(outs))
	for _, o := range outs {
		out, ok := m.outputs[o.GetName()]
		if !ok {
			return nil, fmt.Errorf("unknown output %q (outputs: %s)", o.GetName(), strings.Join(m.order, ", "))
		}
		if seen[o.GetName()] {
			return nil, fmt.Errorf("output %q requested more than once", o.GetName())
		}
		seen[o.GetName()] = true
		wanted = append(wanted, wantedOutput{client: o.GetName(), output: out, params: o.GetParameters()})
	}
	return wanted, nil
}

// matrixError turns a failure to get W_p into a status.
func (m *Model) matrixError(ctx context.Context, c control.Choice, err error) error {
	var se *react.SolveError
	var oe *control.OverloadError
	switch {
	case errors.As(err, &se):
		return status.Errorf(codes.InvalidArgument, "model %q: %v", m.name, err)
	case errors.As(err, &oe):
		return &overloadError{model: m.name, err: oe}
	case ctx.Err() != nil:
		return status.FromContextError(ctx.Err()).Err()
	}
	return status.Errorf(codes.Internal, "model %q: W_p for %s: %v", m.name, c.Canonical(), err)
}

// feature is the backbone's output.
type feature struct {
	datatype string
	shape    []int64
	raw      []byte
}

// callBackbone runs the backbone on the client's inputs and returns its
// feature output. For a request that gets a correction (corrected), the
// version that answers must be the calibrated one (checkAnswerVersion);
// without one, nothing calibrated is applied.
func (m *Model) callBackbone(ctx context.Context, up *Upstream, in *tritonpb.ModelInferRequest, params map[string]*tritonpb.InferParameter, corrected bool) (feature, error) {
	req := &tritonpb.ModelInferRequest{
		ModelName:        m.backbone.model,
		ModelVersion:     m.backbone.version,
		Id:               in.GetId(),
		Parameters:       params,
		Inputs:           m.backboneInputs(in.GetInputs()),
		RawInputContents: in.GetRawInputContents(),
		Outputs:          []*tritonpb.ModelInferRequest_InferRequestedOutputTensor{{Name: m.feature}},
	}
	ctx, cancel := up.callCtx(ctx)
	defer cancel()
	resp, err := up.RPC.ModelInfer(ctx, req)
	if err != nil {
		return feature{}, m.upstreamError(up, "backbone", m.backbone, err)
	}
	if corrected {
		if err := m.checkAnswerVersion("backbone", m.backbone, resp.GetModelVersion()); err != nil {
			return feature{}, err
		}
	}
	t, err := triton.ResponseOutput(resp, m.feature)
	if err != nil {
		return feature{}, status.Errorf(codes.Internal, "model %q: backbone %s: %v", m.name, describe(m.backbone), err)
	}
	if t.Datatype != m.featureType {
		return feature{}, status.Errorf(codes.Internal, "model %q: backbone %s returned %q as %s, not %s as at load time: reload the sidecar",
			m.name, describe(m.backbone), m.feature, t.Datatype, m.featureType)
	}
	d := m.profile.D()
	if len(t.Shape) == 0 || t.Shape[len(t.Shape)-1] != int64(d) {
		return feature{}, status.Errorf(codes.Internal, "model %q: backbone %s returned %q of shape %s; the components file has D=%d",
			m.name, describe(m.backbone), m.feature, triton.FormatShape(t.Shape), d)
	}
	return feature{datatype: t.Datatype, shape: t.Shape, raw: t.Raw}, nil
}

// backboneInputs returns the client's inputs under the backbone's names
// (the inputs themselves when none is renamed).
func (m *Model) backboneInputs(in []*tritonpb.ModelInferRequest_InferInputTensor) []*tritonpb.ModelInferRequest_InferInputTensor {
	if len(m.backboneInput) == 0 {
		return in
	}
	out := make([]*tritonpb.ModelInferRequest_InferInputTensor, len(in))
	for i, t := range in {
		out[i] = t
		if name, ok := m.backboneInput[t.GetName()]; ok {
			out[i] = &tritonpb.ModelInferRequest_InferInputTensor{
				Name: name, Datatype: t.GetDatatype(), Shape: t.GetShape(), Parameters: t.GetParameters(), Contents: t.GetContents(),
			}
		}
	}
	return out
}

// buffers are the scratch memory of one request's correction, pooled so
// that the steady state does not allocate.
type buffers struct {
	z, zhat []float32
	// enc holds the corrected feature encoded in each of the feature datatypes.
	enc [modelinfo.NumFeatureDatatypes][]byte
}

var bufferPool = sync.Pool{New: func() any { return new(buffers) }}

func getBuffers() *buffers  { return bufferPool.Get().(*buffers) }
func putBuffers(b *buffers) { bufferPool.Put(b) }

// encoded is the feature ready for the heads, by modelinfo.FeatureIndex.
type encoded [modelinfo.NumFeatureDatatypes][]byte

// of returns the feature encoded as dt.
func (e *encoded) of(dt string) []byte { return e[modelinfo.FeatureIndex(dt)] }

// correct decodes the feature, applies W (nil: no correction), and encodes
// the result in each datatype a head takes. The result aliases b (and f,
// when the feature passes unchanged).
func (m *Model) correct(b *buffers, f feature, w *control.Matrix) (encoded, error) {
	var out encoded
	if w == nil && !m.needsConversion(f.datatype) {
		// No correction, and every head takes the backbone's datatype:
		// the feature goes on as it came.
		out[modelinfo.FeatureIndex(f.datatype)] = f.raw
		return out, nil
	}
	var err error
	if b.z, err = triton.DecodeFloat32(b.z[:0], f.datatype, f.raw); err != nil {
		return out, status.Errorf(codes.Internal, "model %q: decoding the feature: %v", m.name, err)
	}
	v := b.z
	if w != nil {
		b.zhat = grow(b.zhat, len(b.z))
		if err := w.Apply(b.zhat, b.z); err != nil {
			return out, status.Errorf(codes.Internal, "model %q: %v", m.name, err)
		}
		v = b.zhat
	}
	for i, dt := range modelinfo.FeatureDatatypes() {
		if !m.takes(dt) {
			continue
		}
		if b.enc[i], err = triton.EncodeFloat32(b.enc[i][:0], dt, v); err != nil {
			return out, status.Errorf(codes.Internal, "model %q: encoding the feature as %s: %v", m.name, dt, err)
		}
		out[i] = b.enc[i]
	}
	return out, nil
}

// takes reports whether a head takes the feature as dt.
func (m *Model) takes(dt string) bool {
	for _, h := range m.heads {
		if h.inputType == dt {
			return true
		}
	}
	return false
}

// needsConversion reports whether a head takes the feature in a datatype
// other than dt.
func (m *Model) needsConversion(dt string) bool {
	for _, h := range m.heads {
		if h.inputType != dt {
			return true
		}
	}
	return false
}

// grow returns s resized to n elements, reusing its memory when it can.
func grow(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// callHeads calls, in parallel, every head that produces a wanted output,
// and returns each head's response by head index.
func (m *Model) callHeads(ctx context.Context, up *Upstream, in *tritonpb.ModelInferRequest, params map[string]*tritonpb.InferParameter,
	f feature, enc encoded, wanted []wantedOutput) ([]*tritonpb.ModelInferResponse, error) {
	outs := make([][]*tritonpb.ModelInferRequest_InferRequestedOutputTensor, len(m.heads))
	for _, w := range wanted {
		outs[w.head] = append(outs[w.head], &tritonpb.ModelInferRequest_InferRequestedOutputTensor{Name: w.name, Parameters: w.params})
	}
	answers := make([]*tritonpb.ModelInferResponse, len(m.heads))
	call := func(ctx context.Context, i int) error {
		h := m.heads[i]
		req := &tritonpb.ModelInferRequest{
			ModelName:        h.model,
			ModelVersion:     h.version,
			Id:               in.GetId(),
			Parameters:       params,
			Inputs:           []*tritonpb.ModelInferRequest_InferInputTensor{{Name: h.input, Datatype: h.inputType, Shape: f.shape}},
			RawInputContents: [][]byte{enc.of(h.inputType)},
			Outputs:          outs[i],
		}
		ctx, cancel := up.callCtx(ctx)
		defer cancel()
		resp, err := up.RPC.ModelInfer(ctx, req)
		if err != nil {
			return m.upstreamError(up, "head", h.ref, err)
		}
		answers[i] = resp
		return nil
	}
	var used []int
	for i := range m.heads {
		if len(outs[i]) > 0 {
			used = append(used, i)
		}
	}
	if len(used) == 1 {
		return answers, call(ctx, used[0])
	}
	g, gctx := errgroup.WithContext(ctx)
	for _, i := range used {
		g.Go(func() error { return call(gctx, i) })
	}
	return answers, g.Wait()
}

// upstreamError turns a failed Triton call into the client's status: the
// same code, with the model called named; UNAVAILABLE names Triton's
// address.
func (m *Model) upstreamError(up *Upstream, role string, r ref, err error) error {
	st := status.Convert(err)
	if st.Code() == codes.Unavailable {
		return status.Errorf(codes.Unavailable, "model %q: %s %s: upstream Triton %s: %s", m.name, role, describe(r), up.Addr, st.Message())
	}
	return status.Errorf(st.Code(), "model %q: %s %s: %s", m.name, role, describe(r), st.Message())
}

// assemble builds the client's response from the heads' answers.
func (m *Model) assemble(in *tritonpb.ModelInferRequest, c control.Choice, wanted []wantedOutput, answers []*tritonpb.ModelInferResponse) (*tritonpb.ModelInferResponse, error) {
	resp := &tritonpb.ModelInferResponse{
		ModelName:         m.name,
		ModelVersion:      Version,
		Id:                in.GetId(),
		Parameters:        make(map[string]*tritonpb.InferParameter, 2),
		Outputs:           make([]*tritonpb.ModelInferResponse_InferOutputTensor, 0, len(wanted)),
		RawOutputContents: make([][]byte, 0, len(wanted)),
	}
	setChoice(resp.Parameters, c)
	for _, w := range wanted {
		h := m.heads[w.head]
		t, err := triton.ResponseOutput(answers[w.head], w.name)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "model %q: head %s: %v", m.name, describe(h.ref), err)
		}
		var params map[string]*tritonpb.InferParameter
		for _, o := range answers[w.head].GetOutputs() {
			if o.GetName() == w.name {
				params = o.GetParameters()
			}
		}
		resp.Outputs = append(resp.Outputs, &tritonpb.ModelInferResponse_InferOutputTensor{
			Name: w.client, Datatype: t.Datatype, Shape: t.Shape, Parameters: params,
		})
		resp.RawOutputContents = append(resp.RawOutputContents, t.Raw)
	}
	return resp, nil
}
