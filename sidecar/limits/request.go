package limits

import (
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/triton/tritonhttp"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// Field numbers of ModelInferRequest and its tensors (grpc_service.proto)
// that the limits count.
const (
	fieldRequestParameters = 4 // ModelInferRequest.parameters
	fieldRequestInputs     = 5 // ModelInferRequest.inputs
	fieldRequestOutputs    = 6 // ModelInferRequest.outputs
	fieldInputParameters   = 4 // InferInputTensor.parameters
	fieldOutputParameters  = 2 // InferRequestedOutputTensor.parameters
)

// FromConfig returns the limits of limits.max_inputs, max_outputs and
// max_parameters, as tritonhttp takes them.
func FromConfig(l config.Limits) tritonhttp.Limits {
	return tritonhttp.Limits{MaxInputs: l.MaxInputs, MaxOutputs: l.MaxOutputs, MaxParameters: l.MaxParameters}
}

// CheckCounts checks a serialized ModelInferRequest against the limits on
// its inputs, requested outputs and the parameters of any one of its
// objects, reading the wire format without decoding it: one pass, no
// allocation. It returns a *tritonhttp.LimitError for the first limit
// passed, nil otherwise (a message it cannot read is Triton's to refuse).
func CheckCounts(b []byte, lim tritonhttp.Limits) error {
	var inputs, outputs, params int
	over := func(n, limit int, what string) error {
		if limit > 0 && n > limit {
			return &tritonhttp.LimitError{What: what, Limit: limit}
		}
		return nil
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil
		}
		b = b[n:]
		if typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return nil
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return nil
		}
		b = b[n:]
		var err error
		switch num {
		case fieldRequestParameters:
			params++
			err = over(params, lim.MaxParameters, "parameters")
		case fieldRequestInputs:
			inputs++
			if err = over(inputs, lim.MaxInputs, "inputs"); err == nil {
				err = over(countField(v, fieldInputParameters), lim.MaxParameters, "parameters")
			}
		case fieldRequestOutputs:
			outputs++
			if err = over(outputs, lim.MaxOutputs, "outputs"); err == nil {
				err = over(countField(v, fieldOutputParameters), lim.MaxParameters, "parameters")
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// countField counts the occurrences of a length-delimited field in a
// serialized message.
func countField(b []byte, field protowire.Number) int {
	count := 0
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return count
		}
		b = b[n:]
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return count
		}
		b = b[n:]
		if num == field && typ == protowire.BytesType {
			count++
		}
	}
	return count
}

// Status is the gRPC status of a request over a limit.
func Status(err *tritonhttp.LimitError) error {
	return status.Errorf(codes.ResourceExhausted, "sidecar: request has %s (limits.max_%s)", err.Error(), err.What)
}

// AllowedTritonParameter is the only triton_* request parameter Triton's
// gRPC server accepts.
const AllowedTritonParameter = "triton_enable_empty_final_response"

// CheckTritonParameters refuses, as Triton's gRPC server does, request
// parameters whose keys start with "triton_", for the requests the sidecar
// serves itself (Triton refuses the others). Its HTTP server refuses them
// all; tritonhttp does the same.
func CheckTritonParameters(req *tritonpb.ModelInferRequest) error {
	for k := range req.GetParameters() {
		if strings.HasPrefix(k, "triton_") && k != AllowedTritonParameter {
			return status.Error(codes.InvalidArgument, "parameter keys starting with 'triton_' are reserved for Triton usage. Only the following keys starting with 'triton_' are allowed: "+AllowedTritonParameter)
		}
	}
	return nil
}

// DedupeOutputs drops the requested outputs listed again after their
// first listing, whose parameters win: Triton answers such a request with
// each output once.
func DedupeOutputs(req *tritonpb.ModelInferRequest) {
	outs := req.GetOutputs()
	if len(outs) < 2 {
		return
	}
	seen := make(map[string]bool, len(outs))
	kept := outs[:0]
	for _, o := range outs {
		if !seen[o.GetName()] {
			seen[o.GetName()] = true
			kept = append(kept, o)
		}
	}
	req.Outputs = kept
}

// Reason names the limit a request passed, for the rejection metric.
func Reason(err *tritonhttp.LimitError) string { return fmt.Sprintf("too_many_%s", err.What) }
