package tritonhttp

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/mergectl/react-triton/triton/tritonpb"
)

// Request is an HTTP inference request converted to Triton's gRPC message,
// with what the client asked about the form of the outputs.
type Request struct {
	// Proto is the request as Triton's gRPC server takes it: id,
	// parameters, inputs and requested outputs, with the HTTP-only
	// parameters (binary_data_size, binary_data, binary_data_output)
	// removed. ModelName and ModelVersion are empty: they come from the URL.
	//
	// RawInputContents holds the data of every input that is not in shared
	// memory, in the order of Inputs, JSON data converted to little-endian
	// raw bytes and binary data aliasing the body. An input in shared memory
	// (with a shared_memory_region parameter) has no entry: Triton's gRPC
	// server takes the entries in order for the other inputs only, and
	// fails on an empty placeholder. RawInput finds an input's entry.
	Proto *tritonpb.ModelInferRequest
	// BinaryDataOutput is the request's binary_data_output parameter, false
	// when absent.
	BinaryDataOutput bool
	// BinaryData holds the binary_data parameter of each output in
	// Proto.Outputs, in the same order, false when absent.
	BinaryData []bool
}

// WantsBinary reports whether the client wants output returned as binary
// data rather than JSON, by Triton's rule: an output the request lists
// follows its own binary_data parameter (false when absent, whatever
// binary_data_output says); any other output follows binary_data_output.
func (r *Request) WantsBinary(output string) bool {
	for i, o := range r.Proto.GetOutputs() {
		if o.GetName() == output {
			return i < len(r.BinaryData) && r.BinaryData[i]
		}
	}
	return r.BinaryDataOutput
}

// RawInput returns the raw contents of input i of Proto, and false for an
// input in shared memory, which has none.
func (r *Request) RawInput(i int) ([]byte, bool) {
	j := 0
	for k, in := range r.Proto.GetInputs() {
		shm := hasSharedMemory(in.GetParameters())
		if k == i {
			if shm || j >= len(r.Proto.GetRawInputContents()) {
				return nil, false
			}
			return r.Proto.GetRawInputContents()[j], true
		}
		if !shm {
			j++
		}
	}
	return nil, false
}

func hasSharedMemory(params map[string]*tritonpb.InferParameter) bool {
	_, ok := params["shared_memory_region"]
	return ok
}

// ParseRequest checks the framing of an HTTP inference request and converts
// it. body is the whole (decompressed) request body and headerLength the
// value of its Inference-Header-Content-Length header, "" when absent, in
// which case the whole body is the JSON header.
//
// It checks that the header length is within the body; that the JSON
// header is well formed, with an "inputs" array whose inputs each have a
// name, a known datatype and a shape of at most triton.MaxElements
// elements, and exactly one source of data ("data", a binary_data_size
// parameter or a shared_memory_region parameter); that input names are
// unique; that JSON data hold exactly the shape's element count, of the
// datatype's JSON kind; that binary data sizes agree with the shapes and
// datatypes (BYTES elements are parsed and counted) and add up to exactly
// the bytes after the JSON header.
//
// Every error is a *RequestError, to be answered with HTTP 400. No
// allocation is much larger than the body, whatever the shapes claim.
func ParseRequest(body []byte, headerLength string) (*Request, error) {
	r, err := parseRequest(body, headerLength)
	if err != nil {
		return nil, &RequestError{Msg: err.Error()}
	}
	return r, nil
}

// outputSpec is one requested output of the JSON header, as read.
type outputSpec struct {
	name          string
	params        map[string]*tritonpb.InferParameter
	binary        bool
	shm, classify bool
	nameKnown     bool
	seen          fieldSet
}

func parseRequest(body []byte, headerLength string) (*Request, error) {
	hl, err := headerSize(body, headerLength)
	if err != nil {
		return nil, err
	}
	s := &scanner{buf: body[:hl]}
	r := &Request{Proto: &tritonpb.ModelInferRequest{}}
	inputs, err := r.readHeader(s)
	if err != nil {
		return nil, err
	}
	if err := checkUnique(inputs); err != nil {
		return nil, err
	}
	if err := r.setInputs(inputs, body[hl:], headerLength != ""); err != nil {
		return nil, err
	}
	return r, nil
}

// headerSize returns the length of the JSON header.
func headerSize(body []byte, headerLength string) (int, error) {
	if headerLength == "" {
		if len(body) == 0 {
			return 0, fmt.Errorf("empty body")
		}
		return len(body), nil
	}
	v, err := strconv.ParseUint(headerLength, 10, 64)
	if err != nil || strings.TrimLeft(headerLength, "0123456789") != "" {
		return 0, fmt.Errorf("Inference-Header-Content-Length %q is not a non-negative integer", headerLength)
	}
	switch {
	case v == 0:
		return 0, fmt.Errorf("Inference-Header-Content-Length 0 (the whole body as the raw data of the model's only input) is not supported")
	case v > uint64(len(body)):
		return 0, fmt.Errorf("Inference-Header-Content-Length %d is beyond the %d-byte body", v, len(body))
	}
	return int(v), nil
}

// readHeader reads the JSON header into r.Proto and r's output flags, and
// returns the inputs.
func (r *Request) readHeader(s *scanner) ([]tensorSpec, error) {
	if err := s.beginObject(); err != nil {
		return nil, fmt.Errorf("JSON header: %w", err)
	}
	var inputs []tensorSpec
	var seen fieldSet
	for n := 0; ; {
		key, ok, err := s.member(&n)
		if err != nil {
			return nil, fmt.Errorf("JSON header: %w", err)
		}
		if !ok {
			break
		}
		var f fieldSet
		switch string(key) {
		case "id":
			f = fID
		case "parameters":
			f = fParameters
		case "inputs":
			f = fInputs
		case "outputs":
			f = fOutputs
		}
		if f != 0 {
			if err := seen.see(f, key); err != nil {
				return nil, fmt.Errorf("JSON header: %w", err)
			}
		}
		switch f {
		case fID:
			var v []byte
			if v, err = s.str(); err != nil {
				return nil, fmt.Errorf("id: %w", err)
			}
			r.Proto.Id = string(v)
		case fParameters:
			if r.Proto.Parameters, err = s.params(r.requestParam(s)); err != nil {
				return nil, err
			}
		case fInputs:
			if inputs, err = s.readInputs(); err != nil {
				return nil, err
			}
		case fOutputs:
			if err = r.readOutputs(s); err != nil {
				return nil, err
			}
		default:
			if err = s.skipValue(); err != nil {
				return nil, fmt.Errorf("JSON header: %w", err)
			}
		}
	}
	if err := s.end(); err != nil {
		return nil, fmt.Errorf("JSON header: %w", err)
	}
	if seen&fInputs == 0 {
		return nil, fmt.Errorf(`JSON header: no "inputs"`)
	}
	return inputs, nil
}

// requestParam returns the handler of the request's reserved parameters,
// which Triton's HTTP server reads itself; they keep the types its gRPC
// server wants.
func (r *Request) requestParam(s *scanner) func(string) (*tritonpb.InferParameter, bool, error) {
	return func(key string) (*tritonpb.InferParameter, bool, error) {
		switch key {
		case "binary_data_output":
			v, err := s.boolean()
			r.BinaryDataOutput = v
			return nil, true, err
		case "sequence_id":
			if c, _ := s.peek(); c == '"' {
				return nil, false, nil
			}
			p, err := s.uintParam()
			return p, true, err
		case "sequence_start", "sequence_end":
			v, err := s.boolean()
			return &tritonpb.InferParameter{ParameterChoice: &tritonpb.InferParameter_BoolParam{BoolParam: v}}, true, err
		case "priority":
			v, err := s.uint()
			if v > maxInt64 {
				return &tritonpb.InferParameter{ParameterChoice: &tritonpb.InferParameter_Uint64Param{Uint64Param: v}}, true, err
			}
			return int64Param(int64(v)), true, err
		case "timeout":
			p, err := s.uintParam()
			return p, true, err
		}
		if strings.HasPrefix(key, "triton_") {
			return nil, true, fmt.Errorf(`keys starting with "triton_" are reserved for Triton`)
		}
		return nil, false, nil
	}
}

// readInputs reads the inputs array.
func (s *scanner) readInputs() ([]tensorSpec, error) {
	if err := s.beginArray(); err != nil {
		return nil, fmt.Errorf("inputs: %w", err)
	}
	var inputs []tensorSpec
	for n := 0; ; {
		more, err := s.element(&n)
		if err != nil {
			return nil, fmt.Errorf("inputs: %w", err)
		}
		if !more {
			return inputs, nil
		}
		in, err := s.readTensor("input", len(inputs), true)
		if err != nil {
			return nil, err
		}
		inputs = append(inputs, in)
	}
}

// readOutputs reads the requested outputs.
func (r *Request) readOutputs(s *scanner) error {
	if err := s.beginArray(); err != nil {
		return fmt.Errorf("outputs: %w", err)
	}
	for n := 0; ; {
		more, err := s.element(&n)
		if err != nil {
			return fmt.Errorf("outputs: %w", err)
		}
		if !more {
			return nil
		}
		out, err := s.readOutput(len(r.Proto.Outputs))
		if err != nil {
			return err
		}
		for _, o := range r.Proto.Outputs {
			if o.Name == out.name {
				return fmt.Errorf("output %q: requested more than once", out.name)
			}
		}
		r.Proto.Outputs = append(r.Proto.Outputs, &tritonpb.ModelInferRequest_InferRequestedOutputTensor{Name: out.name, Parameters: out.params})
		r.BinaryData = append(r.BinaryData, out.binary)
	}
}

// readOutput reads requested output i.
func (s *scanner) readOutput(i int) (outputSpec, error) {
	var out outputSpec
	fail := func(err error) (outputSpec, error) {
		if out.nameKnown {
			return out, fmt.Errorf("output %q: %w", out.name, err)
		}
		return out, fmt.Errorf("output %d: %w", i, err)
	}
	if err := s.beginObject(); err != nil {
		return fail(err)
	}
	for n := 0; ; {
		key, ok, err := s.member(&n)
		if err != nil {
			return fail(err)
		}
		if !ok {
			break
		}
		switch string(key) {
		case "name":
			if err = out.seen.see(fName, key); err == nil {
				var v []byte
				if v, err = s.str(); err == nil {
					out.name, out.nameKnown = string(v), true
				} else {
					err = fmt.Errorf("name: %w", err)
				}
			}
		case "parameters":
			if err = out.seen.see(fParameters, key); err == nil {
				out.params, err = s.params(out.param(s))
			}
		default:
			err = s.skipValue()
		}
		if err != nil {
			return fail(err)
		}
	}
	switch {
	case !out.nameKnown:
		return fail(fmt.Errorf(`no "name"`))
	case out.shm && out.classify:
		return fail(fmt.Errorf("parameters shared_memory_region and classification: give only one"))
	case out.shm && out.binary:
		return fail(fmt.Errorf("parameters shared_memory_region and binary_data true: give only one"))
	}
	return out, nil
}

// param returns the handler of an output's parameters of meaning to
// Triton.
func (out *outputSpec) param(s *scanner) func(string) (*tritonpb.InferParameter, bool, error) {
	return func(key string) (*tritonpb.InferParameter, bool, error) {
		switch key {
		case "binary_data":
			v, err := s.boolean()
			out.binary = v
			return nil, true, err
		case "classification":
			// Triton's HTTP server reads 0 as no classification; its gRPC
			// server refuses 0, so 0 is dropped.
			v, err := s.uint()
			if err != nil || v == 0 {
				return nil, true, err
			}
			out.classify = true
			return int64Param(int64(v)), true, nil
		case "shared_memory_region":
			out.shm = true
			return stringParam(s)
		case "shared_memory_offset", "shared_memory_byte_size":
			p, err := s.uintParam()
			return p, true, err
		}
		return nil, false, nil
	}
}

// checkUnique checks that input names are unique.
func checkUnique(inputs []tensorSpec) error {
	for i := 1; i < len(inputs); i++ {
		for j := range i {
			if inputs[i].name == inputs[j].name {
				return fmt.Errorf("input %q: given more than once", inputs[i].name)
			}
		}
	}
	return nil
}

// setInputs checks the binary data that follow the JSON header (rest)
// and fills r.Proto's inputs and raw contents. framed tells whether the
// request had an Inference-Header-Content-Length header.
func (r *Request) setInputs(inputs []tensorSpec, rest []byte, framed bool) error {
	if err := splitBinary(inputs, rest, framed); err != nil {
		return err
	}
	pb := r.Proto
	pb.Inputs = make([]*tritonpb.ModelInferRequest_InferInputTensor, len(inputs))
	pb.RawInputContents = make([][]byte, 0, len(inputs))
	for i := range inputs {
		in := &inputs[i]
		pb.Inputs[i] = &tritonpb.ModelInferRequest_InferInputTensor{
			Name: in.name, Datatype: in.datatype, Shape: in.shape, Parameters: in.params,
		}
		if in.seen&fSharedMemory == 0 {
			pb.RawInputContents = append(pb.RawInputContents, in.raw)
		}
	}
	return nil
}
