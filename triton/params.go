package triton

import (
	"fmt"
	"maps"
	"slices"

	"github.com/mergectl/react-triton/triton/tritonpb"
)

// ToParameters converts parameter values to the protocol's parameters.
// Values may be string, bool, int, int32, int64, uint32, uint64, float32 or
// float64 (sent as int64_param, uint64_param or double_param), or an
// *tritonpb.InferParameter passed as is.
func ToParameters(params map[string]any) (map[string]*tritonpb.InferParameter, error) {
	if len(params) == 0 {
		return nil, nil
	}
	out := make(map[string]*tritonpb.InferParameter, len(params))
	for _, k := range slices.Sorted(maps.Keys(params)) {
		p := &tritonpb.InferParameter{}
		switch v := params[k].(type) {
		case string:
			p.ParameterChoice = &tritonpb.InferParameter_StringParam{StringParam: v}
		case bool:
			p.ParameterChoice = &tritonpb.InferParameter_BoolParam{BoolParam: v}
		case int:
			p.ParameterChoice = &tritonpb.InferParameter_Int64Param{Int64Param: int64(v)}
		case int32:
			p.ParameterChoice = &tritonpb.InferParameter_Int64Param{Int64Param: int64(v)}
		case int64:
			p.ParameterChoice = &tritonpb.InferParameter_Int64Param{Int64Param: v}
		case uint32:
			p.ParameterChoice = &tritonpb.InferParameter_Uint64Param{Uint64Param: uint64(v)}
		case uint64:
			p.ParameterChoice = &tritonpb.InferParameter_Uint64Param{Uint64Param: v}
		case float32:
			p.ParameterChoice = &tritonpb.InferParameter_DoubleParam{DoubleParam: float64(v)}
		case float64:
			p.ParameterChoice = &tritonpb.InferParameter_DoubleParam{DoubleParam: v}
		case *tritonpb.InferParameter:
			p = v
		default:
			return nil, fmt.Errorf("parameter %q: unsupported type %T (want string, bool, integer or float)", k, v)
		}
		out[k] = p
	}
	return out, nil
}

// FromParameters converts the protocol's parameters to Go values: string,
// bool, int64, uint64 or float64. A parameter with no value is left out.
func FromParameters(params map[string]*tritonpb.InferParameter) map[string]any {
	if len(params) == 0 {
		return nil
	}
	out := make(map[string]any, len(params))
	for k, p := range params {
		switch v := p.GetParameterChoice().(type) {
		case *tritonpb.InferParameter_StringParam:
			out[k] = v.StringParam
		case *tritonpb.InferParameter_BoolParam:
			out[k] = v.BoolParam
		case *tritonpb.InferParameter_Int64Param:
			out[k] = v.Int64Param
		case *tritonpb.InferParameter_Uint64Param:
			out[k] = v.Uint64Param
		case *tritonpb.InferParameter_DoubleParam:
			out[k] = v.DoubleParam
		}
	}
	return out
}
