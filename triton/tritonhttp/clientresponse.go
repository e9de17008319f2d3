package tritonhttp

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/mergectl/react-triton/triton/tritonhttp/internal/jsontext"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// DecodeResponse reads an HTTP inference response body, as Triton's HTTP
// server sends it, into the gRPC message: the inverse of EncodeResponse.
// headerLength is the value of the response's Inference-Header-Content-Length
// header, "" when absent.
//
// Every output gets an entry in raw_output_contents: its JSON data
// converted to little-endian raw bytes, its binary data (aliasing body), or
// nothing for an output in shared memory. The response's binary_data_size
// parameters are removed. A body of the form {"error":"..."} returns that
// message as an error.
func DecodeResponse(body []byte, headerLength string) (*tritonpb.ModelInferResponse, error) {
	resp, err := decodeResponse(body, headerLength)
	if err != nil {
		return nil, fmt.Errorf("tritonhttp: response: %w", err)
	}
	return resp, nil
}

func decodeResponse(body []byte, headerLength string) (*tritonpb.ModelInferResponse, error) {
	hl, err := responseHeaderSize(body, headerLength)
	if err != nil {
		return nil, err
	}
	s := &scanner{Scanner: jsontext.New(body[:hl])}
	if err := s.BeginObject(); err != nil {
		return nil, fmt.Errorf("JSON header: %w", err)
	}
	resp := &tritonpb.ModelInferResponse{}
	var outs []tensorSpec
	var seen fieldSet
	for n := 0; ; {
		key, ok, err := s.Member(&n)
		if err != nil {
			return nil, fmt.Errorf("JSON header: %w", err)
		}
		if !ok {
			break
		}
		switch string(key) {
		case "error":
			msg, err := s.Str()
			if err != nil {
				return nil, fmt.Errorf("error: %w", err)
			}
			return nil, fmt.Errorf("server error: %s", msg)
		case "id", "model_name", "model_version":
			field := string(key)
			v, err := s.Str()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", field, err)
			}
			switch field {
			case "id":
				resp.Id = string(v)
			case "model_name":
				resp.ModelName = string(v)
			default:
				resp.ModelVersion = string(v)
			}
		case "parameters":
			if err := seen.see(fParameters, key); err != nil {
				return nil, fmt.Errorf("JSON header: %w", err)
			}
			if resp.Parameters, err = s.params(nil); err != nil {
				return nil, err
			}
		case "outputs":
			if err := seen.see(fOutputs, key); err != nil {
				return nil, fmt.Errorf("JSON header: %w", err)
			}
			if outs, err = s.readOutputTensors(); err != nil {
				return nil, err
			}
		default:
			if err := s.SkipValue(); err != nil {
				return nil, fmt.Errorf("JSON header: %w", err)
			}
		}
	}
	if err := s.End(); err != nil {
		return nil, fmt.Errorf("JSON header: %w", err)
	}
	if err := splitBinary(outs, body[hl:], headerLength != ""); err != nil {
		return nil, err
	}
	resp.Outputs = make([]*tritonpb.ModelInferResponse_InferOutputTensor, len(outs))
	resp.RawOutputContents = make([][]byte, len(outs))
	for i, o := range outs {
		resp.Outputs[i] = &tritonpb.ModelInferResponse_InferOutputTensor{
			Name: o.name, Datatype: o.datatype, Shape: o.shape, Parameters: o.params,
		}
		resp.RawOutputContents[i] = o.raw
		if o.raw == nil {
			resp.RawOutputContents[i] = []byte{}
		}
	}
	return resp, nil
}

// readOutputTensors reads the outputs array of a response.
func (s *scanner) readOutputTensors() ([]tensorSpec, error) {
	if err := s.BeginArray(); err != nil {
		return nil, fmt.Errorf("outputs: %w", err)
	}
	var outs []tensorSpec
	for n := 0; ; {
		more, err := s.Element(&n)
		if err != nil {
			return nil, fmt.Errorf("outputs: %w", err)
		}
		if !more {
			return outs, nil
		}
		o, err := s.readTensor("output", len(outs), false)
		if err != nil {
			return nil, err
		}
		outs = append(outs, o)
	}
}

// responseHeaderSize returns the length of a response's JSON header: the
// Inference-Header-Content-Length headerLength, plain digits within the
// body, or the whole body when it is "".
func responseHeaderSize(body []byte, headerLength string) (int, error) {
	if headerLength == "" {
		if len(body) == 0 {
			return 0, fmt.Errorf("empty body")
		}
		return len(body), nil
	}
	v, err := strconv.ParseUint(headerLength, 10, 64)
	if err != nil || strings.TrimLeft(headerLength, "0123456789") != "" || v == 0 {
		return 0, fmt.Errorf("Inference-Header-Content-Length %q is not a positive integer", headerLength)
	}
	if v > uint64(len(body)) {
		return 0, fmt.Errorf("Inference-Header-Content-Length %d is beyond the %d-byte body", v, len(body))
	}
	return int(v), nil
}
