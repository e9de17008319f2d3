package pipeline

import (
	"fmt"
	"strconv"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// splitParameters separates ReACT's own request parameters from the ones
// passed on to Triton, and reads the experiment key from the parameter
// keyParam names (which is passed on too): a string, or an integer written
// in decimal.
func splitParameters(in map[string]*tritonpb.InferParameter, keyParam string) (map[string]*tritonpb.InferParameter, control.Values, error) {
	var v control.Values
	var out map[string]*tritonpb.InferParameter
	for k, p := range in {
		if keyParam != "" && k == keyParam {
			switch c := p.GetParameterChoice().(type) {
			case *tritonpb.InferParameter_StringParam:
				v.Key = c.StringParam
			case *tritonpb.InferParameter_Int64Param:
				v.Key = strconv.FormatInt(c.Int64Param, 10)
			case *tritonpb.InferParameter_Uint64Param:
				v.Key = strconv.FormatUint(c.Uint64Param, 10)
			default:
				return nil, v, fmt.Errorf("parameter %q, the experiment key, must be a string or an integer", k)
			}
			v.HasKey = true
		}
		if !control.IsOwnKey(k) {
			if out == nil {
				out = make(map[string]*tritonpb.InferParameter, len(in))
			}
			out[k] = p
			continue
		}
		s, ok := p.GetParameterChoice().(*tritonpb.InferParameter_StringParam)
		switch {
		case k == control.KeyPreference && ok:
			v.Preference, v.HasPreference = s.StringParam, true
		case k == control.KeyPreset && ok:
			v.Preset, v.HasPreset = s.StringParam, true
		case k == control.KeyPreference || k == control.KeyPreset:
			return nil, v, fmt.Errorf("parameter %q must be a string", k)
		}
		// Other react-* parameters are ReACT's too, and never reach Triton.
	}
	return out, v, nil
}
