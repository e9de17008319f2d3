// Package tritontest is test support only: an in-process stand-in for
// Triton's gRPC service, shared by the tests of package triton and of its
// subpackages. It imports nothing of ours but triton/tritonpb, so that
// package triton's own tests can use it, and it encodes and decodes the
// few tensors it answers on its own, so that the client's codecs are
// checked against another implementation.
package tritontest

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"net"
	"slices"
	"sync"
	"testing"

	"github.com/x448/float16"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"

	"github.com/mergectl/react-triton/triton/tritonpb"
)

// Target is the address to dial a Server served by Serve at, with the
// dial option Serve returns.
const Target = "passthrough:///bufnet"

// Server implements Triton's gRPC service: the models "affine_fp32" and
// "affine_fp16" (one input INPUT0 of shape [-1 4], one output OUTPUT0 =
// 2·INPUT0+1 in the input's datatype), "masked" (inputs A and the optional
// MASK, output B), and "slow", an affine_fp32 that never answers. The
// metadata and configuration of versions "404", "503", "412", "400" and
// "500" of any model fail with the code the version names (NOT_FOUND,
// UNAVAILABLE, FAILED_PRECONDITION, INVALID_ARGUMENT, INTERNAL). Set its
// exported fields before serving it.
type Server struct {
	tritonpb.UnimplementedGRPCInferenceServiceServer

	// MetaFailures is the number of ModelMetadata calls to fail with
	// UNAVAILABLE before the others answer.
	MetaFailures int
	// TypedOutputs answers with typed contents instead of raw ones.
	TypedOutputs bool
	// ResponseParams are the parameters of every inference response.
	ResponseParams map[string]*tritonpb.InferParameter
	// ConfigCode, when not OK, is the code every ModelConfig fails with
	// (UNIMPLEMENTED: a server without ModelConfig).
	ConfigCode codes.Code

	mu        sync.Mutex
	calls     map[string]int // RPC name -> calls
	inferErr  error          // the error every ModelInfer returns
	lastInfer *tritonpb.ModelInferRequest
}

// Serve serves f over an in-memory listener, with the grpc.health.v1
// service, until the test ends, and returns the dial option that reaches
// it at Target.
func Serve(t testing.TB, f *Server) grpc.DialOption {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer()
	tritonpb.RegisterGRPCInferenceServiceServer(srv, f)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) })
}

// Count returns the number of calls of the RPC so far.
func (f *Server) Count(rpc string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[rpc]
}

// SetInferErr makes every ModelInfer from now on fail with err (nil: answer
// again).
func (f *Server) SetInferErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inferErr = err
}

// LastInfer returns the last inference request received, or nil.
func (f *Server) LastInfer() *tritonpb.ModelInferRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastInfer
}

// AffineMeta returns the metadata of the affine model of datatype dt:
// input INPUT0 and output OUTPUT0, both of shape [-1 4].
func AffineMeta(dt string) *tritonpb.ModelMetadataResponse {
	return &tritonpb.ModelMetadataResponse{
		Name:     "affine_" + map[string]string{"FP32": "fp32", "FP16": "fp16"}[dt],
		Versions: []string{"1"},
		Platform: "python",
		Inputs:   []*tritonpb.ModelMetadataResponse_TensorMetadata{{Name: "INPUT0", Datatype: dt, Shape: []int64{-1, 4}}},
		Outputs:  []*tritonpb.ModelMetadataResponse_TensorMetadata{{Name: "OUTPUT0", Datatype: dt, Shape: []int64{-1, 4}}},
	}
}

func (f *Server) called(rpc string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[rpc]++
}

// ServerLive answers that the server is live.
func (f *Server) ServerLive(context.Context, *tritonpb.ServerLiveRequest) (*tritonpb.ServerLiveResponse, error) {
	f.called("ServerLive")
	return &tritonpb.ServerLiveResponse{Live: true}, nil
}

// ServerReady answers that the server is ready.
func (f *Server) ServerReady(context.Context, *tritonpb.ServerReadyRequest) (*tritonpb.ServerReadyResponse, error) {
	f.called("ServerReady")
	return &tritonpb.ServerReadyResponse{Ready: true}, nil
}

// ModelReady answers that the models the server has are ready.
func (f *Server) ModelReady(_ context.Context, r *tritonpb.ModelReadyRequest) (*tritonpb.ModelReadyResponse, error) {
	f.called("ModelReady")
	return &tritonpb.ModelReadyResponse{Ready: meta(r.GetName()) != nil}, nil
}

// ServerMetadata answers the name "fake", version "0".
func (f *Server) ServerMetadata(context.Context, *tritonpb.ServerMetadataRequest) (*tritonpb.ServerMetadataResponse, error) {
	f.called("ServerMetadata")
	return &tritonpb.ServerMetadataResponse{Name: "fake", Version: "0", Extensions: []string{"statistics"}}, nil
}

func meta(model string) *tritonpb.ModelMetadataResponse {
	switch model {
	case "affine_fp32", "slow":
		m := AffineMeta("FP32")
		m.Name = model
		return m
	case "affine_fp16":
		return AffineMeta("FP16")
	case "masked":
		return &tritonpb.ModelMetadataResponse{Name: model, Inputs: []*tritonpb.ModelMetadataResponse_TensorMetadata{
			{Name: "A", Datatype: "FP32", Shape: []int64{2}},
			{Name: "MASK", Datatype: "BOOL", Shape: []int64{2}},
		}, Outputs: []*tritonpb.ModelMetadataResponse_TensorMetadata{{Name: "B", Datatype: "FP32", Shape: []int64{2}}}}
	}
	return nil
}

// versionErrors are the errors ModelMetadata and ModelConfig answer for
// these model versions, whatever the model.
var versionErrors = map[string]codes.Code{
	"404": codes.NotFound,
	"503": codes.Unavailable,
	"412": codes.FailedPrecondition,
	"400": codes.InvalidArgument,
	"500": codes.Internal,
}

// ModelMetadata answers a model's metadata, after MetaFailures failures.
func (f *Server) ModelMetadata(_ context.Context, r *tritonpb.ModelMetadataRequest) (*tritonpb.ModelMetadataResponse, error) {
	f.called("ModelMetadata")
	if code, ok := versionErrors[r.GetVersion()]; ok {
		return nil, status.Errorf(code, "injected for version %s", r.GetVersion())
	}
	f.mu.Lock()
	fail := f.MetaFailures > 0
	if fail {
		f.MetaFailures--
	}
	f.mu.Unlock()
	if fail {
		return nil, status.Error(codes.Unavailable, "warming up")
	}
	m := meta(r.GetName())
	if m == nil {
		return nil, status.Errorf(codes.NotFound, "Request for unknown model: '%s' is not found", r.GetName())
	}
	return m, nil
}

// ModelConfig answers a model's configuration: its inputs, MASK optional.
func (f *Server) ModelConfig(_ context.Context, r *tritonpb.ModelConfigRequest) (*tritonpb.ModelConfigResponse, error) {
	f.called("ModelConfig")
	if f.ConfigCode != codes.OK {
		return nil, status.Errorf(f.ConfigCode, "injected: ModelConfig fails")
	}
	if code, ok := versionErrors[r.GetVersion()]; ok {
		return nil, status.Errorf(code, "injected for version %s", r.GetVersion())
	}
	m := meta(r.GetName())
	if m == nil {
		return nil, status.Errorf(codes.NotFound, "Request for unknown model: '%s' is not found", r.GetName())
	}
	cfg := &tritonpb.ModelConfig{Name: m.GetName(), Backend: "python"}
	for _, in := range m.GetInputs() {
		dt := tritonpb.DataType(tritonpb.DataType_value["TYPE_"+in.GetDatatype()])
		cfg.Input = append(cfg.Input, &tritonpb.ModelInput{Name: in.GetName(), DataType: dt, Dims: in.GetShape(), Optional: in.GetName() == "MASK"})
	}
	return &tritonpb.ModelConfigResponse{Config: cfg}, nil
}

// ModelStatistics answers the number of inferences so far.
func (f *Server) ModelStatistics(_ context.Context, r *tritonpb.ModelStatisticsRequest) (*tritonpb.ModelStatisticsResponse, error) {
	f.called("ModelStatistics")
	return &tritonpb.ModelStatisticsResponse{ModelStats: []*tritonpb.ModelStatistics{{Name: r.GetName(), Version: "1", InferenceCount: uint64(f.Count("ModelInfer"))}}}, nil
}

// ModelInfer answers OUTPUT0 = 2·x+1 for the first input x (FP32 or FP16;
// raw, or typed FP32), raw or typed as TypedOutputs says.
func (f *Server) ModelInfer(ctx context.Context, r *tritonpb.ModelInferRequest) (*tritonpb.ModelInferResponse, error) {
	f.called("ModelInfer")
	f.mu.Lock()
	f.lastInfer = proto.CloneOf(r)
	err, typed, params := f.inferErr, f.TypedOutputs, f.ResponseParams
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if r.GetModelName() == "slow" {
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	in := r.GetInputs()[0]
	v, err := values(in, r.GetRawInputContents())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	for i := range v {
		v[i] = 2*v[i] + 1
	}
	out := &tritonpb.ModelInferResponse_InferOutputTensor{Name: "OUTPUT0", Datatype: in.GetDatatype(), Shape: in.GetShape()}
	resp := &tritonpb.ModelInferResponse{ModelName: r.GetModelName(), ModelVersion: "1", Id: r.GetId(), Parameters: params,
		Outputs: []*tritonpb.ModelInferResponse_InferOutputTensor{out}}
	switch {
	case typed && in.GetDatatype() != "FP32":
		return nil, status.Errorf(codes.Internal, "%s has no typed contents", in.GetDatatype())
	case typed:
		out.Contents = &tritonpb.InferTensorContents{Fp32Contents: v}
	default:
		resp.RawOutputContents = [][]byte{encode(in.GetDatatype(), v)}
	}
	return resp, nil
}

// values decodes an FP32 or FP16 input, raw (the first raw contents) or
// typed (FP32 only).
func values(in *tritonpb.ModelInferRequest_InferInputTensor, raw [][]byte) ([]float32, error) {
	dt := in.GetDatatype()
	if len(raw) == 0 {
		if dt != "FP32" {
			return nil, fmt.Errorf("typed %s input: want FP32", dt)
		}
		return slices.Clone(in.GetContents().GetFp32Contents()), nil
	}
	b := raw[0]
	var v []float32
	switch dt {
	case "FP32":
		for i := 0; i+4 <= len(b); i += 4 {
			v = append(v, math.Float32frombits(binary.LittleEndian.Uint32(b[i:])))
		}
	case "FP16":
		for i := 0; i+2 <= len(b); i += 2 {
			v = append(v, float16.Frombits(binary.LittleEndian.Uint16(b[i:])).Float32())
		}
	default:
		return nil, fmt.Errorf("%s input: want FP32 or FP16", dt)
	}
	return v, nil
}

// encode is values' inverse for raw contents.
func encode(dt string, v []float32) []byte {
	var b []byte
	for _, x := range v {
		if dt == "FP16" {
			b = binary.LittleEndian.AppendUint16(b, float16.Fromfloat32(x).Bits())
		} else {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
		}
	}
	return b
}
