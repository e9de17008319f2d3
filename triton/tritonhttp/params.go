package tritonhttp

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/mergectl/react-triton/triton/tritonhttp/internal/jsontext"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// param reads one parameter value and converts it as Triton's HTTP server
// does: a string to string_param, true or false to bool_param, an integer
// literal within int64 to int64_param, and any other number (a fraction, an
// exponent, NaN, an integer beyond int64) to double_param. Other values
// (null, objects, arrays) are refused, as Triton refuses them.
func (s *scanner) param() (*tritonpb.InferParameter, error) {
	c, err := s.Peek()
	if err != nil {
		return nil, err
	}
	switch {
	case c == '"':
		v, err := s.Str()
		if err != nil {
			return nil, err
		}
		return &tritonpb.InferParameter{ParameterChoice: &tritonpb.InferParameter_StringParam{StringParam: string(v)}}, nil
	case c == 't' || c == 'f':
		v, err := s.Boolean()
		if err != nil {
			return nil, err
		}
		return &tritonpb.InferParameter{ParameterChoice: &tritonpb.InferParameter_BoolParam{BoolParam: v}}, nil
	case c == '-' || c == 'N' || c == 'I' || (c >= '0' && c <= '9'):
		tok, kind, err := s.Number()
		if err != nil {
			return nil, err
		}
		if v, ok := jsontext.ParseInt(tok, kind, minInt64, maxInt64); ok {
			return &tritonpb.InferParameter{ParameterChoice: &tritonpb.InferParameter_Int64Param{Int64Param: v}}, nil
		}
		f, err := jsontext.ParseFloat(tok, kind)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", tok, err)
		}
		return &tritonpb.InferParameter{ParameterChoice: &tritonpb.InferParameter_DoubleParam{DoubleParam: f}}, nil
	}
	return nil, fmt.Errorf("want a string, boolean or number, got %s", jsontext.KindName(c))
}

const (
	minInt64 = -1 << 63
	maxInt64 = 1<<63 - 1
)

// uintParam reads a non-negative integer parameter as an int64_param, the
// type Triton's gRPC server wants for its own integer parameters. Values
// above the int64 range keep their 64 bits, as Triton reads them back as
// uint64.
func (s *scanner) uintParam() (*tritonpb.InferParameter, error) {
	v, err := s.Uint()
	if err != nil {
		return nil, err
	}
	return int64Param(int64(v)), nil
}

func int64Param(v int64) *tritonpb.InferParameter {
	return &tritonpb.InferParameter{ParameterChoice: &tritonpb.InferParameter_Int64Param{Int64Param: v}}
}

// appendParams appends parameters as a JSON object, keys sorted, extra
// appended last when it is not empty (a member such as
// `"binary_data_size":16`, without braces).
func appendParams(dst []byte, params map[string]*tritonpb.InferParameter, extra []byte) ([]byte, error) {
	dst = append(dst, '{')
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsontext.AppendString(dst, k, false)
		dst = append(dst, ':')
		var err error
		if dst, err = appendParam(dst, params[k]); err != nil {
			return dst, fmt.Errorf("parameter %q: %w", k, err)
		}
	}
	if len(extra) > 0 {
		if len(keys) > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, extra...)
	}
	return append(dst, '}'), nil
}

// appendParam appends one parameter value. A double is written with a '.'
// or an exponent, so that Triton reads it back as a double.
func appendParam(dst []byte, p *tritonpb.InferParameter) ([]byte, error) {
	switch v := p.GetParameterChoice().(type) {
	case *tritonpb.InferParameter_StringParam:
		return jsontext.AppendString(dst, v.StringParam, false), nil
	case *tritonpb.InferParameter_BoolParam:
		return strconv.AppendBool(dst, v.BoolParam), nil
	case *tritonpb.InferParameter_Int64Param:
		return strconv.AppendInt(dst, v.Int64Param, 10), nil
	case *tritonpb.InferParameter_Uint64Param:
		return strconv.AppendUint(dst, v.Uint64Param, 10), nil
	case *tritonpb.InferParameter_DoubleParam:
		return jsontext.AppendFloat(dst, v.DoubleParam, 64), nil
	}
	return dst, fmt.Errorf("no value")
}

// params reads a parameters object. special, when not nil, handles the
// keys it knows first: it reads the value itself and returns the parameter
// to keep (nil to drop it) and true, or false to leave the key to the
// generic conversion of param.
func (s *scanner) params(special func(key string) (*tritonpb.InferParameter, bool, error)) (map[string]*tritonpb.InferParameter, error) {
	if err := s.BeginObject(); err != nil {
		return nil, fmt.Errorf("parameters: %w", err)
	}
	var out map[string]*tritonpb.InferParameter
	var dropped []string
	for n := 0; ; {
		k, ok, err := s.Member(&n)
		if err != nil {
			return nil, fmt.Errorf("parameters: %w", err)
		}
		if !ok {
			return out, nil
		}
		if s.lim.MaxParameters > 0 && n > s.lim.MaxParameters {
			return nil, &LimitError{What: "parameters", Limit: s.lim.MaxParameters}
		}
		key := string(k)
		if _, dup := out[key]; dup || slices.Contains(dropped, key) {
			return nil, fmt.Errorf("parameters: duplicate key %q", key)
		}
		var p *tritonpb.InferParameter
		handled := false
		if special != nil {
			p, handled, err = special(key)
		}
		if !handled && err == nil {
			p, err = s.param()
		}
		if err != nil {
			return nil, fmt.Errorf("parameter %q: %w", key, err)
		}
		if p == nil {
			dropped = append(dropped, key)
			continue
		}
		if out == nil {
			out = make(map[string]*tritonpb.InferParameter)
		}
		out[key] = p
	}
}
