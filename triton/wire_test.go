package triton

import (
	"bytes"
	"math"
	"sort"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/mergectl/react-triton/triton/tritonpb"
)

// These tests prove wire compatibility with Triton independently of our
// .proto files: the bytes are built by hand with protowire from the field
// numbers of Triton's protocol (triton-inference-server/common,
// protobuf/grpc_service.proto and model_config.proto), written here as
// literals. Each case checks that our generated message decodes the bytes
// into the expected values with no unknown fields left over, and that our
// message encodes to the same fields (compared up to the order of distinct
// field numbers, which protobuf leaves to the encoder).

// Hand encoders: each returns one encoded field.
func fStr(num protowire.Number, s string) []byte {
	return protowire.AppendString(protowire.AppendTag(nil, num, protowire.BytesType), s)
}

func fBytes(num protowire.Number, b []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), b)
}

func fVarint(num protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
}

func fDouble(num protowire.Number, v float64) []byte {
	return protowire.AppendFixed64(protowire.AppendTag(nil, num, protowire.Fixed64Type), math.Float64bits(v))
}

func fMsg(num protowire.Number, fields ...[]byte) []byte {
	return fBytes(num, bytes.Join(fields, nil))
}

// fPackedVarint is a packed repeated varint field (int32, int64, uint32,
// uint64, bool, enum); negative int64 values use ten bytes.
func fPackedVarint(num protowire.Number, vs ...int64) []byte {
	var p []byte
	for _, v := range vs {
		p = protowire.AppendVarint(p, uint64(v))
	}
	return fBytes(num, p)
}

func fPackedFloat(num protowire.Number, vs ...float32) []byte {
	var p []byte
	for _, v := range vs {
		p = protowire.AppendFixed32(p, math.Float32bits(v))
	}
	return fBytes(num, p)
}

func fPackedDouble(num protowire.Number, vs ...float64) []byte {
	var p []byte
	for _, v := range vs {
		p = protowire.AppendFixed64(p, math.Float64bits(v))
	}
	return fBytes(num, p)
}

// fMapEntry is one entry of a map field: key is field 1, value field 2.
func fMapEntry(num protowire.Number, key string, value []byte) []byte {
	return fMsg(num, fStr(1, key), value)
}

func msg(fields ...[]byte) []byte { return bytes.Join(fields, nil) }

func TestWireCompatibility(t *testing.T) {
	tests := []struct {
		name string
		wire []byte
		want proto.Message
	}{
		{
			name: "ModelReadyRequest",
			wire: msg(fStr(1, "affine_fp32"), fStr(2, "1")),
			want: &tritonpb.ModelReadyRequest{Name: "affine_fp32", Version: "1"},
		},
		{
			name: "ServerLiveResponse",
			wire: fVarint(1, 1),
			want: &tritonpb.ServerLiveResponse{Live: true},
		},
		{
			name: "ServerMetadataResponse",
			wire: msg(fStr(1, "triton"), fStr(2, "2.51.0"), fStr(3, "classification"), fStr(3, "statistics")),
			want: &tritonpb.ServerMetadataResponse{Name: "triton", Version: "2.51.0", Extensions: []string{"classification", "statistics"}},
		},
		{
			name: "ModelMetadataResponse",
			wire: msg(
				fStr(1, "affine_fp32"), fStr(2, "1"), fStr(3, "python"),
				fMsg(4, fStr(1, "INPUT0"), fStr(2, "FP32"), fPackedVarint(3, -1, 4)),
				fMsg(5, fStr(1, "OUTPUT0"), fStr(2, "FP32"), fPackedVarint(3, -1, 4)),
			),
			want: &tritonpb.ModelMetadataResponse{
				Name: "affine_fp32", Versions: []string{"1"}, Platform: "python",
				Inputs:  []*tritonpb.ModelMetadataResponse_TensorMetadata{{Name: "INPUT0", Datatype: "FP32", Shape: []int64{-1, 4}}},
				Outputs: []*tritonpb.ModelMetadataResponse_TensorMetadata{{Name: "OUTPUT0", Datatype: "FP32", Shape: []int64{-1, 4}}},
			},
		},
		{
			name: "ModelInferRequest raw and typed",
			wire: msg(
				fStr(1, "affine_fp32"), fStr(2, "1"), fStr(3, "req-7"),
				// parameters: bool 1, int64 2, string 3, double 4, uint64 5
				fMapEntry(4, "a", fMsg(2, fVarint(1, 1))),
				fMapEntry(4, "b", fMsg(2, fVarint(2, 42))),
				fMapEntry(4, "c", fMsg(2, fStr(3, "x=1"))),
				fMapEntry(4, "d", fMsg(2, fDouble(4, 0.5))),
				fMapEntry(4, "e", fMsg(2, fVarint(5, 1<<63))),
				fMsg(5, fStr(1, "INPUT0"), fStr(2, "FP32"), fPackedVarint(3, 1, 2)),
				fMsg(5, fStr(1, "T"), fStr(2, "FP32"), fPackedVarint(3, 2),
					fMapEntry(4, "p", fMsg(2, fVarint(2, 3))),
					fMsg(5, fPackedFloat(6, 1.5, -2))),
				fMsg(6, fStr(1, "OUTPUT0"), fMapEntry(2, "binary_data", fMsg(2, fVarint(1, 1)))),
				fBytes(7, []byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0x40}),
			),
			want: &tritonpb.ModelInferRequest{
				ModelName: "affine_fp32", ModelVersion: "1", Id: "req-7",
				Parameters: map[string]*tritonpb.InferParameter{
					"a": {ParameterChoice: &tritonpb.InferParameter_BoolParam{BoolParam: true}},
					"b": {ParameterChoice: &tritonpb.InferParameter_Int64Param{Int64Param: 42}},
					"c": {ParameterChoice: &tritonpb.InferParameter_StringParam{StringParam: "x=1"}},
					"d": {ParameterChoice: &tritonpb.InferParameter_DoubleParam{DoubleParam: 0.5}},
					"e": {ParameterChoice: &tritonpb.InferParameter_Uint64Param{Uint64Param: 1 << 63}},
				},
				Inputs: []*tritonpb.ModelInferRequest_InferInputTensor{
					{Name: "INPUT0", Datatype: "FP32", Shape: []int64{1, 2}},
					{Name: "T", Datatype: "FP32", Shape: []int64{2},
						Parameters: map[string]*tritonpb.InferParameter{"p": {ParameterChoice: &tritonpb.InferParameter_Int64Param{Int64Param: 3}}},
						Contents:   &tritonpb.InferTensorContents{Fp32Contents: []float32{1.5, -2}}},
				},
				Outputs: []*tritonpb.ModelInferRequest_InferRequestedOutputTensor{
					{Name: "OUTPUT0", Parameters: map[string]*tritonpb.InferParameter{"binary_data": {ParameterChoice: &tritonpb.InferParameter_BoolParam{BoolParam: true}}}},
				},
				RawInputContents: [][]byte{{0, 0, 0x80, 0x3f, 0, 0, 0, 0x40}},
			},
		},
		{
			name: "InferTensorContents every field",
			wire: msg(
				fPackedVarint(1, 1, 0),
				fPackedVarint(2, -3),
				fPackedVarint(3, -4),
				fPackedVarint(4, 5),
				fPackedVarint(5, 6),
				fPackedFloat(6, 7),
				fPackedDouble(7, 8),
				fBytes(8, []byte("nine")),
			),
			want: &tritonpb.InferTensorContents{
				BoolContents: []bool{true, false}, IntContents: []int32{-3}, Int64Contents: []int64{-4},
				UintContents: []uint32{5}, Uint64Contents: []uint64{6}, Fp32Contents: []float32{7},
				Fp64Contents: []float64{8}, BytesContents: [][]byte{[]byte("nine")},
			},
		},
		{
			name: "ModelInferResponse",
			wire: msg(
				fStr(1, "affine_fp16"), fStr(2, "1"), fStr(3, "req-7"),
				fMapEntry(4, "react-preference", fMsg(2, fStr(3, "a=1"))),
				fMsg(5, fStr(1, "OUTPUT0"), fStr(2, "FP16"), fPackedVarint(3, 1, 4)),
				fBytes(6, []byte{0, 0x3c, 0, 0x3c, 0, 0x3c, 0, 0x3c}),
			),
			want: &tritonpb.ModelInferResponse{
				ModelName: "affine_fp16", ModelVersion: "1", Id: "req-7",
				Parameters:        map[string]*tritonpb.InferParameter{"react-preference": {ParameterChoice: &tritonpb.InferParameter_StringParam{StringParam: "a=1"}}},
				Outputs:           []*tritonpb.ModelInferResponse_InferOutputTensor{{Name: "OUTPUT0", Datatype: "FP16", Shape: []int64{1, 4}}},
				RawOutputContents: [][]byte{{0, 0x3c, 0, 0x3c, 0, 0x3c, 0, 0x3c}},
			},
		},
		{
			name: "ModelStreamInferResponse",
			wire: msg(fStr(1, "boom"), fMsg(2, fStr(1, "m"))),
			want: &tritonpb.ModelStreamInferResponse{ErrorMessage: "boom", InferResponse: &tritonpb.ModelInferResponse{ModelName: "m"}},
		},
		{
			name: "ModelConfigResponse",
			wire: fMsg(1, // config
				fStr(1, "affine_fp32"),
				fStr(2, "python"),
				fMsg(3, fMsg(1, fVarint(1, 2))), // version_policy.latest.num_versions
				fVarint(4, 8),                   // max_batch_size
				fMsg(5, fStr(1, "INPUT0"), fVarint(2, 11), fPackedVarint(4, -1, 4), fMsg(5, fPackedVarint(1, 4)), fVarint(8, 1)),
				fMsg(6, fStr(1, "OUTPUT0"), fVarint(2, 10), fPackedVarint(3, -1, 4)),
				fMsg(7, fStr(1, "g"), fVarint(2, 2), fPackedVarint(3, 0, 1), fVarint(4, 2)),
				fMsg(11, fPackedVarint(1, 4, 8), fVarint(2, 100)), // dynamic_batching
				fMapEntry(14, "k", fMsg(2, fStr(1, "v"))),         // parameters
				fStr(17, "python"), // backend
			),
			want: &tritonpb.ModelConfigResponse{Config: &tritonpb.ModelConfig{
				Name: "affine_fp32", Platform: "python", Backend: "python", MaxBatchSize: 8,
				VersionPolicy: &tritonpb.ModelVersionPolicy{PolicyChoice: &tritonpb.ModelVersionPolicy_Latest_{Latest: &tritonpb.ModelVersionPolicy_Latest{NumVersions: 2}}},
				Input: []*tritonpb.ModelInput{{Name: "INPUT0", DataType: tritonpb.DataType_TYPE_FP32, Dims: []int64{-1, 4},
					Reshape: &tritonpb.ModelTensorReshape{Shape: []int64{4}}, Optional: true}},
				Output:           []*tritonpb.ModelOutput{{Name: "OUTPUT0", DataType: tritonpb.DataType_TYPE_FP16, Dims: []int64{-1, 4}}},
				InstanceGroup:    []*tritonpb.ModelInstanceGroup{{Name: "g", Count: 2, Gpus: []int32{0, 1}, Kind: tritonpb.ModelInstanceGroup_KIND_CPU}},
				SchedulingChoice: &tritonpb.ModelConfig_DynamicBatching{DynamicBatching: &tritonpb.ModelDynamicBatching{PreferredBatchSize: []int32{4, 8}, MaxQueueDelayMicroseconds: 100}},
				Parameters:       map[string]*tritonpb.ModelParameter{"k": {StringValue: "v"}},
			}},
		},
		{
			name: "ModelConfig ensemble",
			wire: msg(
				fStr(1, "ens"),
				fMsg(15, fMsg(1, fStr(1, "backbone"), fVarint(2, math.MaxUint64), // model_version -1
					fMapEntry(3, "IN", fStr(2, "x")), fMapEntry(4, "OUT", fStr(2, "z")))),
			),
			want: &tritonpb.ModelConfig{Name: "ens", SchedulingChoice: &tritonpb.ModelConfig_EnsembleScheduling{EnsembleScheduling: &tritonpb.ModelEnsembling{
				Step: []*tritonpb.ModelEnsembling_Step{{ModelName: "backbone", ModelVersion: -1, InputMap: map[string]string{"IN": "x"}, OutputMap: map[string]string{"OUT": "z"}}},
			}}},
		},
		{
			name: "ModelStatisticsResponse",
			wire: fMsg(1,
				fStr(1, "affine_fp32"), fStr(2, "1"), fVarint(3, 1700000000000), fVarint(4, 12), fVarint(5, 3),
				fMsg(6, fMsg(1, fVarint(1, 3), fVarint(2, 9000)), fMsg(3, fVarint(1, 3), fVarint(2, 100))),
				fMsg(7, fVarint(1, 4), fMsg(3, fVarint(1, 3), fVarint(2, 5000))),
				fMsg(8, fStr(1, "CPU"), fVarint(3, 1024)),
			),
			want: &tritonpb.ModelStatisticsResponse{ModelStats: []*tritonpb.ModelStatistics{{
				Name: "affine_fp32", Version: "1", LastInference: 1700000000000, InferenceCount: 12, ExecutionCount: 3,
				InferenceStats: &tritonpb.InferStatistics{
					Success: &tritonpb.StatisticDuration{Count: 3, Ns: 9000},
					Queue:   &tritonpb.StatisticDuration{Count: 3, Ns: 100},
				},
				BatchStats:  []*tritonpb.InferBatchStatistics{{BatchSize: 4, ComputeInfer: &tritonpb.StatisticDuration{Count: 3, Ns: 5000}}},
				MemoryUsage: []*tritonpb.MemoryUsage{{Type: "CPU", ByteSize: 1024}},
			}}},
		},
		{
			name: "RepositoryIndexResponse",
			wire: fMsg(1, fStr(1, "affine_fp32"), fStr(2, "1"), fStr(3, "READY")),
			want: &tritonpb.RepositoryIndexResponse{Models: []*tritonpb.RepositoryIndexResponse_ModelIndex{{Name: "affine_fp32", Version: "1", State: "READY"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.want.ProtoReflect().New().Interface()
			if err := proto.Unmarshal(tt.wire, got); err != nil {
				t.Fatalf("decoding the hand-built bytes: %v", err)
			}
			// proto.Equal also compares unknown fields: a field number we got
			// wrong would land there.
			if !proto.Equal(got, tt.want) {
				t.Errorf("decoded\n%v\nwant\n%v", got, tt.want)
			}
			enc, err := proto.MarshalOptions{Deterministic: true}.Marshal(tt.want)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(canonical(enc), canonical(tt.wire)) {
				t.Errorf("encoded\n% x\nwant (up to field order)\n% x", enc, tt.wire)
			}
		})
	}
}

// canonical re-encodes a message with its fields stably sorted by number,
// at every depth: a length-delimited value that parses as a message is
// treated as one. Two encodings that differ only in the order of distinct
// fields have the same canonical form.
func canonical(b []byte) []byte {
	type field struct {
		num protowire.Number
		enc []byte
	}
	var fields []field
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil
		}
		b = b[n:]
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return nil
		}
		val := b[:m]
		if typ == protowire.BytesType {
			inner, _ := protowire.ConsumeBytes(val)
			if c := canonical(inner); c != nil || len(inner) == 0 {
				val = protowire.AppendBytes(nil, c)
			}
		}
		fields = append(fields, field{num, append(protowire.AppendTag(nil, num, typ), val...)})
		b = b[m:]
	}
	sort.SliceStable(fields, func(i, j int) bool { return fields[i].num < fields[j].num })
	out := []byte{}
	for _, f := range fields {
		out = append(out, f.enc...)
	}
	return out
}

// Fields of Triton's messages that we do not declare (here sequence_batching,
// field 13 of ModelConfig, and an input's is_non_linear_format_io, field 9)
// must survive a decode and re-encode unchanged, so the sidecar can serve a
// configuration it read from Triton.
func TestWireUnknownFieldsSurvive(t *testing.T) {
	wire := msg(
		fStr(1, "seq"),
		fMsg(5, fStr(1, "IN"), fVarint(2, 14), fVarint(9, 1)),
		fMsg(13, fVarint(1, 1000)),
	)
	var cfg tritonpb.ModelConfig
	if err := proto.Unmarshal(wire, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.GetInput()[0].GetDataType() != tritonpb.DataType_TYPE_BF16 {
		t.Errorf("data_type = %v, want TYPE_BF16", cfg.GetInput()[0].GetDataType())
	}
	enc, err := proto.Marshal(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(enc, wire) {
		t.Errorf("re-encoded\n% x\nwant\n% x", enc, wire)
	}
}

// The enum values and RPC paths of Triton's protocol, as literals.
func TestWireNamesAndNumbers(t *testing.T) {
	enums := map[tritonpb.DataType]int32{
		tritonpb.DataType_TYPE_INVALID: 0, tritonpb.DataType_TYPE_BOOL: 1, tritonpb.DataType_TYPE_UINT8: 2,
		tritonpb.DataType_TYPE_UINT16: 3, tritonpb.DataType_TYPE_UINT32: 4, tritonpb.DataType_TYPE_UINT64: 5,
		tritonpb.DataType_TYPE_INT8: 6, tritonpb.DataType_TYPE_INT16: 7, tritonpb.DataType_TYPE_INT32: 8,
		tritonpb.DataType_TYPE_INT64: 9, tritonpb.DataType_TYPE_FP16: 10, tritonpb.DataType_TYPE_FP32: 11,
		tritonpb.DataType_TYPE_FP64: 12, tritonpb.DataType_TYPE_STRING: 13, tritonpb.DataType_TYPE_BF16: 14,
	}
	for e, want := range enums {
		if int32(e) != want {
			t.Errorf("%v = %d, want %d", e, int32(e), want)
		}
	}
	kinds := map[tritonpb.ModelInstanceGroup_Kind]int32{
		tritonpb.ModelInstanceGroup_KIND_AUTO: 0, tritonpb.ModelInstanceGroup_KIND_GPU: 1,
		tritonpb.ModelInstanceGroup_KIND_CPU: 2, tritonpb.ModelInstanceGroup_KIND_MODEL: 3,
	}
	for k, want := range kinds {
		if int32(k) != want {
			t.Errorf("%v = %d, want %d", k, int32(k), want)
		}
	}
	methods := map[string]string{
		tritonpb.GRPCInferenceService_ServerLive_FullMethodName:       "/inference.GRPCInferenceService/ServerLive",
		tritonpb.GRPCInferenceService_ServerReady_FullMethodName:      "/inference.GRPCInferenceService/ServerReady",
		tritonpb.GRPCInferenceService_ModelReady_FullMethodName:       "/inference.GRPCInferenceService/ModelReady",
		tritonpb.GRPCInferenceService_ServerMetadata_FullMethodName:   "/inference.GRPCInferenceService/ServerMetadata",
		tritonpb.GRPCInferenceService_ModelMetadata_FullMethodName:    "/inference.GRPCInferenceService/ModelMetadata",
		tritonpb.GRPCInferenceService_ModelInfer_FullMethodName:       "/inference.GRPCInferenceService/ModelInfer",
		tritonpb.GRPCInferenceService_ModelStreamInfer_FullMethodName: "/inference.GRPCInferenceService/ModelStreamInfer",
		tritonpb.GRPCInferenceService_ModelConfig_FullMethodName:      "/inference.GRPCInferenceService/ModelConfig",
		tritonpb.GRPCInferenceService_ModelStatistics_FullMethodName:  "/inference.GRPCInferenceService/ModelStatistics",
		tritonpb.GRPCInferenceService_RepositoryIndex_FullMethodName:  "/inference.GRPCInferenceService/RepositoryIndex",
	}
	for got, want := range methods {
		if got != want {
			t.Errorf("method %s, want %s", got, want)
		}
	}
}
