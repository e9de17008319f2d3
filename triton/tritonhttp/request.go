package tritonhttp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/mergectl/react-triton/triton/tritonhttp/internal/jsontext"
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
	// Raw is true for a raw binary request (an
	// Inference-Header-Content-Length of 0, or an empty body without one):
	// the whole body, RawBody, is the data of the model's only input, whose
	// name, datatype and shape Triton deduces from the model's
	// configuration. Proto then has no inputs, and BinaryDataOutput is
	// true, as Triton answers such requests in binary.
	Raw     bool
	RawBody []byte
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

// Options are what ParseRequestWith needs besides the body.
type Options struct {
	// HeaderLength is the value of the request's
	// Inference-Header-Content-Length header, and HasHeaderLength whether
	// it had one (Triton reads an empty value as 0).
	HeaderLength    string
	HasHeaderLength bool
	// Limits bound the request's inputs, outputs and parameters.
	Limits Limits
}

// Limits bound the work ParseRequestWith does for one request: the inputs
// and requested outputs it reads, and the parameters of any one object
// (the request's, an input's or an output's). A zero field means no bound.
type Limits struct {
	MaxInputs     int
	MaxOutputs    int
	MaxParameters int
}

// ParseRequest is ParseRequestWith without limits or cancellation, the
// header length given as its value ("" when absent).
func ParseRequest(body []byte, headerLength string) (*Request, error) {
	return ParseRequestWith(context.Background(), body, Options{HeaderLength: headerLength, HasHeaderLength: headerLength != ""})
}

// ParseRequestWith checks the framing of an HTTP inference request and
// converts it. body is the whole (decompressed) request body.
//
// The Inference-Header-Content-Length header is read as Triton reads it,
// with C's atoi (leading white space, a sign, then digits; "252abc" is 252,
// "abc" is 0). A length below 0 or beyond the body is refused as Triton
// refuses it. A length of 0, or an empty body without the header, makes
// a raw binary request (Request.Raw), which has nothing more to check.
// Otherwise it checks that the JSON header is well formed, with an
// "inputs" array whose inputs each have a name, a known datatype and a
// shape of at most triton.MaxElements elements, and exactly one source of
// data ("data", a binary_data_size parameter or a shared_memory_region
// parameter); that input names are unique; that JSON data hold exactly
// the shape's element count, of the datatype's JSON kind; that binary data
// sizes agree with the shapes and datatypes (BYTES elements are parsed and
// counted) and add up to exactly the bytes after the JSON header. An
// output listed twice is requested once, with the first listing's
// parameters, as Triton does.
//
// Every check is linear in the size of the body. It stops with ctx's error
// when ctx ends (the client went away), and with a *LimitError beyond
// opt.Limits. A JSON header that does not parse is a *TritonError with
// Triton's status (500) and message, as is a header length out of range
// (400); every other problem is a *RequestError, to be answered with HTTP
// 400. No allocation is much larger than the body, whatever the shapes
// claim.
func ParseRequestWith(ctx context.Context, body []byte, opt Options) (*Request, error) {
	hl, err := headerSize(body, opt)
	if err != nil {
		return nil, err
	}
	if hl == 0 {
		return &Request{Proto: &tritonpb.ModelInferRequest{}, BinaryDataOutput: true, Raw: true, RawBody: body}, nil
	}
	s := &scanner{Scanner: jsontext.NewContext(ctx, body[:hl]), lim: opt.Limits}
	r, err := parseRequest(s, body[hl:], opt.HasHeaderLength)
	if err == nil {
		return r, nil
	}
	var le *LimitError
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.As(err, &le):
		return nil, le
	}
	// Triton parses the whole header before it looks at it: a syntax error
	// anywhere is what it reports; but JSON nested deeper than jsontext.MaxDepth
	// crashes it, and is refused as such.
	te, depth := syntaxError(body[:hl])
	switch {
	case s.TooDeep():
		return nil, &RequestError{Msg: err.Error()}
	case depth > jsontext.MaxDepth:
		return nil, &RequestError{Msg: fmt.Sprintf("JSON header: JSON nested deeper than %d levels", jsontext.MaxDepth)}
	}
	if te != nil {
		return nil, te
	}
	if errors.As(err, &te) {
		return nil, te
	}
	return nil, &RequestError{Msg: err.Error()}
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

func parseRequest(s *scanner, rest []byte, framed bool) (*Request, error) {
	r := &Request{Proto: &tritonpb.ModelInferRequest{}}
	inputs, err := r.readHeader(s)
	if err != nil {
		return nil, err
	}
	if err := checkUnique(inputs); err != nil {
		return nil, err
	}
	if err := r.setInputs(inputs, rest, framed); err != nil {
		return nil, err
	}
	return r, nil
}

// headerSize returns the length of the JSON header, 0 for a raw request.
func headerSize(body []byte, opt Options) (int, error) {
	if !opt.HasHeaderLength {
		return len(body), nil
	}
	v := atoi(opt.HeaderLength)
	if v < 0 || v > len(body) {
		return 0, &TritonError{Status: 400, Msg: fmt.Sprintf("inference header size should be in range (0, %d), got: %s", len(body), opt.HeaderLength), ContentType: "text/plain"}
	}
	return v, nil
}

// atoi reads s as glibc's atoi does: (int)strtol(s, NULL, 10) on a 64-bit
// system. Leading white space, an optional sign, then decimal digits up to
// the first other byte; no digits is 0; a value beyond the range of long
// is clamped to it; the result is truncated to 32 bits.
func atoi(s string) int {
	i := 0
	for i < len(s) && (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r')) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	var v uint64
	over := false
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		d := uint64(s[i] - '0')
		if v > (math.MaxUint64-d)/10 {
			over = true
			continue
		}
		v = v*10 + d
	}
	var l int64
	switch {
	case neg && (over || v > 1<<63):
		l = math.MinInt64
	case neg:
		l = -int64(v)
	case over || v > math.MaxInt64:
		l = math.MaxInt64
	default:
		l = int64(v)
	}
	return int(int32(l))
}

// readHeader reads the JSON header into r.Proto and r's output flags, and
// returns the inputs.
func (r *Request) readHeader(s *scanner) ([]tensorSpec, error) {
	if err := s.BeginObject(); err != nil {
		return nil, fmt.Errorf("JSON header: %w", err)
	}
	var inputs []tensorSpec
	var seen fieldSet
	for n := 0; ; {
		key, ok, err := s.Member(&n)
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
			if v, err = s.Str(); err != nil {
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
			if err = s.SkipValue(); err != nil {
				return nil, fmt.Errorf("JSON header: %w", err)
			}
		}
	}
	if err := s.End(); err != nil {
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
			v, err := s.Boolean()
			r.BinaryDataOutput = v
			return nil, true, err
		case "sequence_id":
			if c, _ := s.Peek(); c == '"' {
				return nil, false, nil
			}
			p, err := s.uintParam()
			return p, true, err
		case "sequence_start", "sequence_end":
			v, err := s.Boolean()
			return &tritonpb.InferParameter{ParameterChoice: &tritonpb.InferParameter_BoolParam{BoolParam: v}}, true, err
		case "priority":
			v, err := s.Uint()
			if v > maxInt64 {
				return &tritonpb.InferParameter{ParameterChoice: &tritonpb.InferParameter_Uint64Param{Uint64Param: v}}, true, err
			}
			return int64Param(int64(v)), true, err
		case "timeout":
			p, err := s.uintParam()
			return p, true, err
		}
		if strings.HasPrefix(key, "triton_") {
			return nil, true, &TritonError{Status: 400, Msg: "parameter keys starting with 'triton_' are reserved for Triton usage and should not be specified."}
		}
		return nil, false, nil
	}
}

// readInputs reads the inputs array.
func (s *scanner) readInputs() ([]tensorSpec, error) {
	if err := s.BeginArray(); err != nil {
		return nil, fmt.Errorf("inputs: %w", err)
	}
	var inputs []tensorSpec
	for n := 0; ; {
		more, err := s.Element(&n)
		if err != nil {
			return nil, fmt.Errorf("inputs: %w", err)
		}
		if !more {
			return inputs, nil
		}
		if s.lim.MaxInputs > 0 && n > s.lim.MaxInputs {
			return nil, &LimitError{What: "inputs", Limit: s.lim.MaxInputs}
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
	if err := s.BeginArray(); err != nil {
		return fmt.Errorf("outputs: %w", err)
	}
	var seen map[string]bool
	for n := 0; ; {
		more, err := s.Element(&n)
		if err != nil {
			return fmt.Errorf("outputs: %w", err)
		}
		if !more {
			return nil
		}
		if s.lim.MaxOutputs > 0 && n > s.lim.MaxOutputs {
			return &LimitError{What: "outputs", Limit: s.lim.MaxOutputs}
		}
		out, err := s.readOutput(n - 1)
		if err != nil {
			return err
		}
		// Triton answers an output listed twice once, as its first
		// listing asks.
		if seen == nil {
			seen = make(map[string]bool)
		}
		if seen[out.name] {
			continue
		}
		seen[out.name] = true
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
	if err := s.BeginObject(); err != nil {
		return fail(err)
	}
	for n := 0; ; {
		key, ok, err := s.Member(&n)
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
				if v, err = s.Str(); err == nil {
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
			err = s.SkipValue()
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
			v, err := s.Boolean()
			out.binary = v
			return nil, true, err
		case "classification":
			// Triton's HTTP server reads 0 as no classification; its gRPC
			// server refuses 0, so 0 is dropped.
			v, err := s.Uint()
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
	seen := make(map[string]struct{}, len(inputs))
	for i := range inputs {
		if _, dup := seen[inputs[i].name]; dup {
			return fmt.Errorf("input %q: given more than once", inputs[i].name)
		}
		seen[inputs[i].name] = struct{}{}
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
