package tritonhttp

import (
	"fmt"
	"maps"
	"strconv"

	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/tritonhttp/internal/jsontext"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// EncodeRequest returns the HTTP request body of a gRPC inference request,
// for clients of Triton's HTTP endpoint (tests, benchmarks): the inverse of
// ParseRequest. req.ModelName and req.ModelVersion belong in the URL and
// are not encoded.
//
// With binary set, every input's data follows the JSON header as binary
// data, and every output is asked for as binary (binary_data_output when
// req lists no outputs); else every input's data is a flat JSON array and
// the outputs come back as JSON. FP16 and BF16 inputs have no JSON form and
// need binary.
//
// Input data come from req's raw_input_contents, one entry per input not
// in shared memory (as Triton's gRPC server reads them), or else from the
// inputs' typed contents. headerLength is the JSON header's length when
// binary data follow it, for the Inference-Header-Content-Length header,
// and -1 when the body is JSON only.
func EncodeRequest(req *tritonpb.ModelInferRequest, binary bool) (body []byte, headerLength int, err error) {
	data, err := inputData(req)
	if err != nil {
		return nil, 0, err
	}
	estimate := 256
	binSize := 0
	for i, in := range req.GetInputs() {
		estimate += 64 + len(in.GetName()) + 8*len(in.GetShape())
		if binary {
			binSize += len(data[i])
		} else {
			estimate += jsonSizeEstimate(in.GetDatatype(), len(data[i]))
		}
	}
	b := make([]byte, 0, estimate+binSize)
	b = append(b, '{')
	if id := req.GetId(); id != "" {
		b = append(b, `"id":`...)
		b = jsontext.AppendString(b, id, false)
		b = append(b, ',')
	}
	params := unsignedParams(req.GetParameters(), "sequence_id", "timeout")
	var extra []byte
	if binary && len(req.GetOutputs()) == 0 {
		params = without(params, "binary_data_output")
		extra = []byte(`"binary_data_output":true`)
	}
	if len(params) > 0 || extra != nil {
		b = append(b, `"parameters":`...)
		if b, err = appendParams(b, params, extra); err != nil {
			return nil, 0, fmt.Errorf("tritonhttp: request %w", err)
		}
		b = append(b, ',')
	}
	b = append(b, `"inputs":[`...)
	for i, in := range req.GetInputs() {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = appendInput(b, in, data[i], binary); err != nil {
			return nil, 0, fmt.Errorf("tritonhttp: input %q: %w", in.GetName(), err)
		}
	}
	b = append(b, ']')
	if len(req.GetOutputs()) > 0 {
		b = append(b, `,"outputs":[`...)
		for i, o := range req.GetOutputs() {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"name":`...)
			b = jsontext.AppendString(b, o.GetName(), false)
			params := unsignedParams(without(o.GetParameters(), "binary_data"), "classification", "shared_memory_offset", "shared_memory_byte_size")
			var extra []byte
			if binary && !hasSharedMemory(params) {
				extra = []byte(`"binary_data":true`)
			}
			if len(params) > 0 || extra != nil {
				b = append(b, `,"parameters":`...)
				if b, err = appendParams(b, params, extra); err != nil {
					return nil, 0, fmt.Errorf("tritonhttp: output %q: %w", o.GetName(), err)
				}
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, '}')
	if !binary || binSize == 0 {
		return b, -1, nil
	}
	headerLength = len(b)
	for _, d := range data {
		b = append(b, d...)
	}
	return b, headerLength, nil
}

// inputData returns the data of each input of req, nil for an input in
// shared memory.
func inputData(req *tritonpb.ModelInferRequest) ([][]byte, error) {
	raw := req.GetRawInputContents()
	data := make([][]byte, len(req.GetInputs()))
	j := 0
	for i, in := range req.GetInputs() {
		switch {
		case hasSharedMemory(in.GetParameters()):
		case len(raw) > 0:
			if j >= len(raw) {
				return nil, fmt.Errorf("tritonhttp: %d raw input contents for more inputs not in shared memory", len(raw))
			}
			data[i] = raw[j]
			j++
		case in.GetContents() != nil:
			t, err := triton.FromContents(in.GetName(), in.GetDatatype(), in.GetShape(), in.GetContents())
			if err != nil {
				return nil, fmt.Errorf("tritonhttp: %w", err)
			}
			data[i] = t.Raw
		default:
			return nil, fmt.Errorf("tritonhttp: input %q: no data", in.GetName())
		}
	}
	if j < len(raw) {
		return nil, fmt.Errorf("tritonhttp: %d raw input contents for %d inputs not in shared memory", len(raw), j)
	}
	return data, nil
}

// appendInput appends the JSON object of one input.
func appendInput(b []byte, in *tritonpb.ModelInferRequest_InferInputTensor, data []byte, binary bool) ([]byte, error) {
	shm := hasSharedMemory(in.GetParameters())
	if !shm {
		n, err := triton.NumElements(in.GetShape())
		if err != nil {
			return b, err
		}
		if err := triton.CheckData(in.GetDatatype(), in.GetShape(), n, data); err != nil {
			return b, err
		}
		if !binary && (in.GetDatatype() == triton.FP16 || in.GetDatatype() == triton.BF16) {
			return b, fmt.Errorf("%s data have no JSON form: send them as binary", in.GetDatatype())
		}
	}
	b = append(b, `{"name":`...)
	b = jsontext.AppendString(b, in.GetName(), false)
	b = append(b, `,"datatype":`...)
	b = jsontext.AppendString(b, in.GetDatatype(), false)
	b = append(b, `,"shape":[`...)
	for i, d := range in.GetShape() {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, d, 10)
	}
	b = append(b, ']')
	params := unsignedParams(without(in.GetParameters(), "binary_data_size"), "shared_memory_offset", "shared_memory_byte_size")
	var extra []byte
	if binary && !shm {
		extra = strconv.AppendInt([]byte(`"binary_data_size":`), int64(len(data)), 10)
	}
	if len(params) > 0 || extra != nil {
		var err error
		b = append(b, `,"parameters":`...)
		if b, err = appendParams(b, params, extra); err != nil {
			return b, err
		}
	}
	if !binary && !shm {
		var err error
		b = append(b, `,"data":`...)
		if b, err = appendData(b, in.GetDatatype(), data); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// unsignedParams returns params with the negative int64 values of keys as
// the uint64 of the same bits. Triton's HTTP server reads these parameters
// as unsigned integers, and its gRPC server takes them as int64_param and
// reads the bits back as uint64.
func unsignedParams(params map[string]*tritonpb.InferParameter, keys ...string) map[string]*tritonpb.InferParameter {
	cloned := false
	for _, k := range keys {
		v, ok := params[k].GetParameterChoice().(*tritonpb.InferParameter_Int64Param)
		if !ok || v.Int64Param >= 0 {
			continue
		}
		if !cloned {
			params, cloned = maps.Clone(params), true
		}
		params[k] = &tritonpb.InferParameter{ParameterChoice: &tritonpb.InferParameter_Uint64Param{Uint64Param: uint64(v.Int64Param)}}
	}
	return params
}

// without returns params without key, copying the map only when it holds
// key.
func without(params map[string]*tritonpb.InferParameter, key string) map[string]*tritonpb.InferParameter {
	if _, ok := params[key]; !ok {
		return params
	}
	out := maps.Clone(params)
	delete(out, key)
	return out
}
