package controllable

import (
	"context"
	"errors"
	"math"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/sidecar/backendmode"
	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/limits"
	"github.com/mergectl/react-triton/sidecar/outcomes"
	"github.com/mergectl/react-triton/sidecar/passthrough"
	"github.com/mergectl/react-triton/sidecar/pipeline"
	"github.com/mergectl/react-triton/sidecar/readiness"
	"github.com/mergectl/react-triton/triton/tritonhttp"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// The methods of Triton's inference service the sidecar answers itself for
// controllable models.
const (
	methodInfer         = passthrough.Service + "ModelInfer"
	methodModelMetadata = passthrough.Service + "ModelMetadata"
	methodModelReady    = passthrough.Service + "ModelReady"
	methodModelConfig   = passthrough.Service + "ModelConfig"
	methodModelStats    = passthrough.Service + "ModelStatistics"
	methodIndex         = passthrough.Service + "RepositoryIndex"
	methodServerReady   = passthrough.Service + "ServerReady"
)

// GRPCInterceptor returns the handler of the methods that concern
// controllable models, for the proxy's seam. Each reads the request and
// passes it on untouched unless it names a controllable model.
func (ms *Models) GRPCInterceptor() passthrough.GRPCInterceptor {
	return func(method string) passthrough.GRPCHandler {
		switch method {
		case methodInfer:
			return ms.grpcInfer
		case passthrough.MethodStreamInfer:
			return ms.grpcStream
		case methodModelMetadata:
			return ms.unary(ms.metadata, true)
		case methodModelReady:
			return ms.unary(ms.ready, true)
		case methodModelConfig:
			return ms.unary(ms.config, true)
		case methodModelStats:
			return ms.grpcStatistics
		case methodIndex:
			return ms.grpcIndex
		case methodServerReady:
			return ms.grpcServerReady
		}
		return nil
	}
}

// modelName reads field 1, the model name of every request message that
// names a model, from a serialized message without decoding the rest. A
// message it cannot read names no model; Triton will say what is wrong.
func modelName(b []byte) string { return passthrough.StringField(b, 1) }

// sendProto serializes a response message onto the raw stream.
func sendProto(ss grpc.ServerStream, m proto.Message) error {
	b, err := proto.Marshal(m)
	if err != nil {
		return status.Errorf(codes.Internal, "sidecar: encoding the response: %v", err)
	}
	return ss.SendMsg(&passthrough.Frame{Payload: b})
}

// unary adapts an answer for one controllable model to a unary gRPC
// handler: requests for other models pass through, and so do those for a
// model of the graph form when tritons is set (Triton answers for the
// ensemble it runs).
func (ms *Models) unary(answer func(ctx context.Context, m *pipeline.Model, req []byte) (proto.Message, error), tritons bool) passthrough.GRPCHandler {
	return func(ss grpc.ServerStream, pass func(*passthrough.Frame) error) error {
		f, err := passthrough.RecvRequest(ss)
		if err != nil {
			return err
		}
		m, _, ok, err := ms.lookup(modelName(f.Payload))
		if !ok {
			return pass(f)
		}
		if err != nil {
			return err
		}
		if tritons && m.Ensemble() != "" {
			return pass(f)
		}
		resp, err := answer(ss.Context(), m, f.Payload)
		if err != nil {
			return err
		}
		return sendProto(ss, resp)
	}
}

// checkStatisticsVersion refuses, as Triton does for statistics, a version
// other than the controllable model's one with INVALID_ARGUMENT.
func checkStatisticsVersion(m *pipeline.Model, version string) error {
	if !m.OwnVersion(version) {
		return status.Errorf(codes.InvalidArgument, "model %q: requested model version %s is not available (the controllable model serves version %s)", m.Name(), version, m.Version())
	}
	return nil
}

// checkVersion refuses a version other than the controllable model's one.
func checkVersion(m *pipeline.Model, version string) error {
	if !m.OwnVersion(version) {
		return status.Errorf(codes.NotFound, "model %q has no version %s (the controllable model serves version %s)", m.Name(), version, m.Version())
	}
	return nil
}

func (ms *Models) metadata(_ context.Context, m *pipeline.Model, b []byte) (proto.Message, error) {
	var req tritonpb.ModelMetadataRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "sidecar: ModelMetadataRequest: %v", err)
	}
	if err := checkVersion(m, req.GetVersion()); err != nil {
		return nil, err
	}
	return m.Metadata(), nil
}

func (ms *Models) ready(ctx context.Context, m *pipeline.Model, b []byte) (proto.Message, error) {
	var req tritonpb.ModelReadyRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "sidecar: ModelReadyRequest: %v", err)
	}
	if !m.OwnVersion(req.GetVersion()) {
		// As Triton: a version that does not exist is not ready.
		return &tritonpb.ModelReadyResponse{Ready: false}, nil
	}
	ready, err := ms.modelReady(ctx, m)
	if err != nil {
		return nil, err
	}
	return &tritonpb.ModelReadyResponse{Ready: ready}, nil
}

func (ms *Models) config(_ context.Context, m *pipeline.Model, b []byte) (proto.Message, error) {
	var req tritonpb.ModelConfigRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "sidecar: ModelConfigRequest: %v", err)
	}
	if err := checkVersion(m, req.GetVersion()); err != nil {
		return nil, err
	}
	return &tritonpb.ModelConfigResponse{Config: m.Config()}, nil
}

// grpcStatistics answers ModelStatistics: a controllable model's own
// counts; for every model (an empty name), Triton's list with the
// controllable models' counts in place of any model they shadow.
func (ms *Models) grpcStatistics(ss grpc.ServerStream, pass func(*passthrough.Frame) error) error {
	f, err := passthrough.RecvRequest(ss)
	if err != nil {
		return err
	}
	var req tritonpb.ModelStatisticsRequest
	if err := proto.Unmarshal(f.Payload, &req); err != nil {
		return pass(f)
	}
	if req.GetName() != "" {
		m, _, ok, err := ms.lookup(req.GetName())
		if !ok {
			return pass(f)
		}
		if err != nil {
			return err
		}
		if m.Relays(req.GetVersion()) {
			return pass(f) // another version of the ensemble: Triton's counts
		}
		if err := checkStatisticsVersion(m, req.GetVersion()); err != nil {
			return err
		}
		return sendProto(ss, &tritonpb.ModelStatisticsResponse{ModelStats: []*tritonpb.ModelStatistics{m.Stats().Proto(m.Name(), m.Version())}})
	}
	ctx := ms.upstreamContext(ss.Context())
	resp, err := ms.rpc.ModelStatistics(ctx, &req)
	if err != nil {
		return ms.upstreamError(err)
	}
	resp.ModelStats = ms.mergeStatistics(resp.GetModelStats())
	return sendProto(ss, resp)
}

// mergeStatistics replaces the statistics of shadowed models with the
// controllable models' and appends the others. The other versions of a
// graph-form model's ensemble keep Triton's.
func (ms *Models) mergeStatistics(stats []*tritonpb.ModelStatistics) []*tritonpb.ModelStatistics {
	st := ms.state.Load()
	out := stats[:0]
	for _, s := range stats {
		if !st.replaces(s.GetName(), s.GetVersion()) {
			out = append(out, s)
		}
	}
	for _, m := range ms.all() {
		out = append(out, m.Stats().Proto(m.Name(), m.Version()))
	}
	return out
}

// grpcIndex answers RepositoryIndex: Triton's index, with each controllable
// model listed as version 1, READY once it is built (UNAVAILABLE while
// loading), in place of any model it shadows.
func (ms *Models) grpcIndex(ss grpc.ServerStream, pass func(*passthrough.Frame) error) error {
	f, err := passthrough.RecvRequest(ss)
	if err != nil {
		return err
	}
	var req tritonpb.RepositoryIndexRequest
	if err := proto.Unmarshal(f.Payload, &req); err != nil {
		return pass(f)
	}
	resp, err := ms.rpc.RepositoryIndex(ms.upstreamContext(ss.Context()), &req)
	if err != nil {
		return ms.upstreamError(err)
	}
	resp.Models = ms.mergeIndex(resp.GetModels(), req.GetReady())
	return sendProto(ss, resp)
}

// mergeIndex puts the controllable models into a repository index, in
// place of the models they shadow (but for the other versions of a
// graph-form model's ensemble, which Triton serves).
func (ms *Models) mergeIndex(models []*tritonpb.RepositoryIndexResponse_ModelIndex, readyOnly bool) []*tritonpb.RepositoryIndexResponse_ModelIndex {
	st := ms.state.Load()
	out := models[:0]
	for _, m := range models {
		if !st.replaces(m.GetName(), m.GetVersion()) {
			out = append(out, m)
		}
	}
	for _, name := range ms.declared() {
		e := &tritonpb.RepositoryIndexResponse_ModelIndex{Name: name, Version: pipeline.Version, State: "READY"}
		if m := st.set.Model(name); m != nil {
			e.Version = m.Version()
		}
		if st.set == nil {
			e.State, e.Reason = "UNAVAILABLE", "the sidecar is loading its controllable models"
		}
		if readyOnly && e.State != "READY" {
			continue
		}
		out = append(out, e)
	}
	return out
}

// grpcServerReady answers ServerReady: ready when Triton is, the
// controllable models are built and every model they call is ready on
// Triton.
func (ms *Models) grpcServerReady(ss grpc.ServerStream, pass func(*passthrough.Frame) error) error {
	f, err := passthrough.RecvRequest(ss)
	if err != nil {
		return err
	}
	var nr *readiness.NotReadyError
	switch err := ms.checkReady(ss.Context()); {
	case err == nil:
		return pass(f)
	case errors.As(err, &nr):
		return sendProto(ss, &tritonpb.ServerReadyResponse{Ready: false})
	default:
		return err
	}
}

// preferenceKeys reads ReACT's keys from gRPC metadata.
func preferenceKeys(md metadata.MD) control.Values { return control.ValuesFrom(md.Get) }

// preferenceHeader reads ReACT's keys from gRPC metadata, and the key of
// the model's experiment.
func preferenceHeader(md metadata.MD, m *pipeline.Model) control.Values {
	v := preferenceKeys(md)
	if h := m.KeyHeader(); h != "" {
		if p := md.Get(h); len(p) > 0 {
			v.Key, v.HasKey = p[0], true
		}
	}
	return v
}

// responseHeader is the header metadata of a controllable model's answer:
// the applied preference, the arm when there is one, and the id the
// sidecar gave the request when it had none.
func responseHeader(resp *tritonpb.ModelInferResponse) metadata.MD {
	md := metadata.Pairs(control.KeyPreference, preferenceOf(resp))
	if arm := armOf(resp); arm != "" {
		md.Set(control.KeyArm, arm)
	}
	if id := requestIDOf(resp); id != "" {
		md.Set(outcomes.KeyRequestID, id)
	}
	return md
}

// grpcInfer answers ModelInfer: for every model, the request is held
// against limits.max_inflight_bytes and its inputs, outputs and parameters
// counted against the limits, then it is passed on, or served for a
// controllable model.
func (ms *Models) grpcInfer(ss grpc.ServerStream, pass func(*passthrough.Frame) error) error {
	f, err := passthrough.RecvRequest(ss)
	if err != nil {
		return err
	}
	cfg := ms.Config()
	res, later, err := ms.admitFrame(f, cfg)
	if err != nil {
		if later {
			ss.SetTrailer(retryAfter(cfg.Admission.RetryAfter))
		}
		return err
	}
	defer res.Release()
	m, up, ok, err := ms.lookup(modelName(f.Payload))
	md, _ := metadata.FromIncomingContext(ss.Context())
	if !ok {
		relay, err := ms.relayed(ss.Context(), md, f)
		if err != nil {
			return err
		}
		if err := pass(relay); err != nil {
			return err
		}
		// The response is sent: the sample, if any, runs after it.
		ms.sampleRelayed(md, f.Payload)
		return nil
	}
	if err != nil {
		return err
	}
	ctx := control.WithClientKey(ss.Context(), ms.clientKey(m, metadataGetter(md), peerAddr(peer.FromContext(ss.Context()))))
	ctx, sample := withPendingSample(ctx, md)
	defer sample.run() // after the response is sent
	resp, err := ms.infer(ctx, m, up, f.Payload, preferenceHeader(md, m), "grpc")
	if err != nil {
		var oe *control.OverloadError
		if errors.As(err, &oe) {
			ss.SetTrailer(retryAfter(oe.RetryAfter))
		}
		return err
	}
	if err := ss.SendHeader(responseHeader(resp)); err != nil {
		return err
	}
	return sendProto(ss, resp)
}

// relayed returns the request, for a model that is not controllable, that
// goes to Triton: the client's, with the react-preference and react-preset
// headers of md turned into request parameters when the model reads them
// (backend mode; backendParameters).
func (ms *Models) relayed(ctx context.Context, md metadata.MD, f *passthrough.Frame) (*passthrough.Frame, error) {
	params, err := ms.backendParameters(ctx, modelName(f.Payload), passthrough.StringField(f.Payload, 2), preferenceKeys(md))
	if err != nil || params == nil {
		return f, err
	}
	return &passthrough.Frame{Payload: backendmode.SetGRPC(f.Payload, params)}, nil
}

// admitFrame holds an inference request's message against
// limits.max_inflight_bytes and checks its counts against the limits on
// inputs, outputs and parameters; a refusal is a RESOURCE_EXHAUSTED status,
// counted; later reports a refusal for now (the budget is full), which may
// be tried again after admission.retry_after. The caller releases the
// reservation when done with the frame.
func (ms *Models) admitFrame(f *passthrough.Frame, cfg *config.Config) (res *limits.Reservation, later bool, err error) {
	res, err = ms.budget.Reserve(int64(len(f.Payload)))
	var be *limits.BudgetError
	if errors.As(err, &be) {
		reason := "memory"
		if be.Never {
			reason = "too_large"
		}
		ms.reject("grpc", reason)
		return nil, !be.Never, limits.BudgetStatus(be)
	}
	var le *tritonhttp.LimitError
	if errors.As(limits.CheckCounts(f.Payload, limits.FromConfig(cfg.Limits)), &le) {
		res.Release()
		ms.reject("grpc", limits.Reason(le))
		return nil, false, limits.Status(le)
	}
	return res, false, nil
}

// retryAfter is the trailer of a call refused for now: retry-after, in
// whole seconds, as HTTP's Retry-After.
func retryAfter(d time.Duration) metadata.MD {
	return metadata.Pairs("retry-after", strconv.FormatInt(int64(math.Ceil(d.Seconds())), 10))
}

// reject counts a request refused before it reached Triton.
func (ms *Models) reject(protocol, reason string) {
	if ms.metrics != nil {
		ms.metrics.Reject(protocol, reason)
	}
}

// infer decodes and serves one request for a controllable model, and
// records it in the model's statistics and the metrics. A message over
// limits.max_request_bytes is refused with RESOURCE_EXHAUSTED.
func (ms *Models) infer(ctx context.Context, m *pipeline.Model, up *pipeline.Upstream, payload []byte, hdr control.Values, protocol string) (*tritonpb.ModelInferResponse, error) {
	start := time.Now()
	req := new(tritonpb.ModelInferRequest)
	var err error
	if limit := int64(ms.Config().Limits.MaxRequestBytes); int64(len(payload)) > limit {
		err = status.Errorf(codes.ResourceExhausted, "sidecar: model %q: request of %d bytes is larger than limits.max_request_bytes (%d)", m.Name(), len(payload), limit)
		ms.reject(protocol, "too_large")
	} else if err = proto.Unmarshal(payload, req); err != nil {
		err = status.Errorf(codes.InvalidArgument, "sidecar: ModelInferRequest: %v", err)
	} else {
		err = limits.CheckTritonParameters(req)
	}
	return ms.serve(ms.upstreamContext(ctx), m, up, req, hdr, protocol, start, err)
}

// serve runs a decoded request through the pipeline (unless decoding
// failed: decodeErr) and records it. An output requested twice is answered
// once, as Triton does.
func (ms *Models) serve(ctx context.Context, m *pipeline.Model, up *pipeline.Upstream, req *tritonpb.ModelInferRequest, hdr control.Values,
	protocol string, start time.Time, decodeErr error) (*tritonpb.ModelInferResponse, error) {
	var res *pipeline.Result
	err := decodeErr
	if err == nil {
		limits.DedupeOutputs(req)
		res, err = m.Infer(ctx, up, pipeline.Request{Proto: req, Header: hdr})
		if err != nil {
			err = ms.partGone(ctx, m, err)
		} else {
			ms.offerServed(ctx, m, req, res)
		}
	}
	took := time.Since(start)
	rows := 0
	if res != nil {
		rows = res.Rows
	}
	if !m.Relays(req.GetModelVersion()) {
		// Triton counts what a graph-form model relays to another version.
		m.Stats().Record(rows, took, err == nil)
	}
	if err == nil {
		ms.feedback.Record(m.Name(), req, res)
	}
	code := status.Code(err)
	if errors.Is(err, context.Canceled) {
		code = codes.Canceled
	}
	if errors.Is(err, control.ErrPresetsOnly) {
		ms.reject(protocol, "presets_only")
	}
	if ms.metrics != nil {
		ms.metrics.Served(m.Name(), protocol, res, took, code)
	}
	if err != nil {
		if code == codes.Internal || code == codes.Unknown {
			ms.log.Error("inference failed", "model", m.Name(), "protocol", protocol, "error", err)
		} else {
			ms.log.Debug("inference refused", "model", m.Name(), "protocol", protocol, "code", code.String(), "error", err)
		}
		return nil, ms.clientError(err)
	}
	return res.Response, nil
}

// preferenceOf returns the react-preference parameter of a response.
func preferenceOf(resp *tritonpb.ModelInferResponse) string {
	return resp.GetParameters()[control.KeyPreference].GetStringParam()
}

// requestIDOf returns the react-request-id parameter of a response, ""
// when none.
func requestIDOf(resp *tritonpb.ModelInferResponse) string {
	return resp.GetParameters()[outcomes.KeyRequestID].GetStringParam()
}

// armOf returns the react-arm parameter of a response, "" when none.
func armOf(resp *tritonpb.ModelInferResponse) string {
	return resp.GetParameters()[control.KeyArm].GetStringParam()
}
