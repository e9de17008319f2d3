package tritonhttp

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"

	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/tritonhttp/internal/jsontext"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// outputForm is how one output travels in an HTTP response.
type outputForm uint8

const (
	formJSON   outputForm = iota // "data" in the JSON header
	formBinary                   // after the JSON header, sized by binary_data_size
	formNone                     // no data: the output went to shared memory
)

// EncodeResponse returns the HTTP response body of a gRPC inference
// response, answering the HTTP request req, as Triton's HTTP server would
// have answered it.
//
// Each output's data comes from resp's raw_output_contents at the same
// index (the way Triton's gRPC server always answers), or else from its
// typed contents. An output the client wants as binary (req.WantsBinary)
// gets a binary_data_size parameter and its bytes after the JSON header;
// any other output gets a flat "data" array; an output requested into
// shared memory gets neither. A nil req asks for JSON throughout.
//
// headerLength is the length of the JSON header when binary data follows
// it, and -1 when the body is JSON only (binary outputs of zero bytes
// included, as in Triton). The caller then sets Inference-Header-Content-Length
// and Content-Type application/octet-stream, or Content-Type
// application/json.
//
// An FP16 or BF16 output asked for as JSON fails with a *RequestError, as
// Triton answers 400: such values have no JSON form. Any other error means
// resp is inconsistent (data that do not match a shape).
func EncodeResponse(resp *tritonpb.ModelInferResponse, req *Request) (body []byte, headerLength int, err error) {
	outs := resp.GetOutputs()
	raw := resp.GetRawOutputContents()
	if len(raw) != 0 && len(raw) != len(outs) {
		return nil, 0, fmt.Errorf("tritonhttp: response has %d raw output contents for %d outputs", len(raw), len(outs))
	}
	data := make([][]byte, len(outs))
	forms := make([]outputForm, len(outs))
	estimate := 128 + len(resp.GetId()) + len(resp.GetModelName()) + 32*len(resp.GetParameters())
	binSize := 0
	for i, o := range outs {
		d, err := outputData(o, raw, i)
		if err != nil {
			return nil, 0, err
		}
		data[i] = d
		forms[i] = outputFormOf(o.GetName(), req)
		estimate += 64 + len(o.GetName()) + 8*len(o.GetShape())
		switch forms[i] {
		case formBinary:
			binSize += len(d)
		case formJSON:
			if o.GetDatatype() == triton.FP16 || o.GetDatatype() == triton.BF16 {
				return nil, 0, &RequestError{Msg: fmt.Sprintf("output %q: %s data cannot be sent as JSON; ask for it as binary data", o.GetName(), o.GetDatatype())}
			}
			estimate += jsonSizeEstimate(o.GetDatatype(), len(d))
		}
	}

	b := make([]byte, 0, estimate+binSize)
	b = append(b, '{')
	if id := resp.GetId(); id != "" {
		b = append(b, `"id":`...)
		b = jsontext.AppendString(b, id, false)
		b = append(b, ',')
	}
	b = append(b, `"model_name":`...)
	b = jsontext.AppendString(b, resp.GetModelName(), false)
	b = append(b, `,"model_version":`...)
	b = jsontext.AppendString(b, resp.GetModelVersion(), false)
	if len(resp.GetParameters()) > 0 {
		b = append(b, `,"parameters":`...)
		if b, err = appendParams(b, resp.GetParameters(), nil); err != nil {
			return nil, 0, fmt.Errorf("tritonhttp: response %w", err)
		}
	}
	b = append(b, `,"outputs":[`...)
	for i, o := range outs {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = appendOutput(b, o, data[i], forms[i]); err != nil {
			return nil, 0, fmt.Errorf("tritonhttp: output %q: %w", o.GetName(), err)
		}
	}
	b = append(b, ']', '}')
	if binSize == 0 {
		return b, -1, nil
	}
	headerLength = len(b)
	for i, d := range data {
		if forms[i] == formBinary {
			b = append(b, d...)
		}
	}
	return b, headerLength, nil
}

// outputData returns the data of output i: its raw contents, or its typed
// contents converted.
func outputData(o *tritonpb.ModelInferResponse_InferOutputTensor, raw [][]byte, i int) ([]byte, error) {
	if len(raw) != 0 {
		return raw[i], nil
	}
	if o.GetContents() == nil {
		return nil, nil
	}
	t, err := triton.FromContents(o.GetName(), o.GetDatatype(), o.GetShape(), o.GetContents())
	if err != nil {
		return nil, fmt.Errorf("tritonhttp: output %q: %w", o.GetName(), err)
	}
	return t.Raw, nil
}

// outputFormOf returns how the client of req wants output name.
func outputFormOf(name string, req *Request) outputForm {
	if req == nil {
		return formJSON
	}
	for _, o := range req.Proto.GetOutputs() {
		if o.GetName() == name && hasSharedMemory(o.GetParameters()) {
			return formNone
		}
	}
	if req.WantsBinary(name) {
		return formBinary
	}
	return formJSON
}

// jsonSizeEstimate guesses the JSON size of size bytes of datatype dt.
func jsonSizeEstimate(dt string, size int) int {
	switch dt {
	case triton.BOOL:
		return 6 * size
	case triton.INT8, triton.UINT8:
		return 4 * size
	case triton.BYTES:
		return size + size/8 + 16
	}
	return 3 * size // about 12 characters per 4 bytes
}

// appendOutput appends the JSON object of one output.
func appendOutput(b []byte, o *tritonpb.ModelInferResponse_InferOutputTensor, data []byte, form outputForm) ([]byte, error) {
	n, err := triton.NumElements(o.GetShape())
	if err != nil {
		return b, err
	}
	if form != formNone {
		if err := triton.CheckData(o.GetDatatype(), o.GetShape(), n, data); err != nil {
			return b, err
		}
	}
	b = append(b, `{"name":`...)
	b = jsontext.AppendString(b, o.GetName(), false)
	b = append(b, `,"datatype":`...)
	b = jsontext.AppendString(b, o.GetDatatype(), false)
	b = append(b, `,"shape":[`...)
	for i, d := range o.GetShape() {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, d, 10)
	}
	b = append(b, ']')
	var extra []byte
	if form == formBinary {
		extra = strconv.AppendInt([]byte(`"binary_data_size":`), int64(len(data)), 10)
	}
	if len(o.GetParameters()) > 0 || extra != nil {
		b = append(b, `,"parameters":`...)
		if b, err = appendParams(b, o.GetParameters(), extra); err != nil {
			return b, err
		}
	}
	if form == formJSON {
		b = append(b, `,"data":`...)
		if b, err = appendData(b, o.GetDatatype(), data); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// appendData appends raw little-endian data of datatype dt as a flat JSON
// array. The size was checked.
func appendData(b []byte, dt string, data []byte) ([]byte, error) {
	b = append(b, '[')
	size, _ := triton.ElementSize(dt)
	for i := 0; i < len(data); {
		if i > 0 {
			b = append(b, ',')
		}
		switch dt {
		case triton.BOOL:
			b = strconv.AppendBool(b, data[i] != 0)
		case triton.UINT8:
			b = strconv.AppendUint(b, uint64(data[i]), 10)
		case triton.UINT16:
			b = strconv.AppendUint(b, uint64(binary.LittleEndian.Uint16(data[i:])), 10)
		case triton.UINT32:
			b = strconv.AppendUint(b, uint64(binary.LittleEndian.Uint32(data[i:])), 10)
		case triton.UINT64:
			b = strconv.AppendUint(b, binary.LittleEndian.Uint64(data[i:]), 10)
		case triton.INT8:
			b = strconv.AppendInt(b, int64(int8(data[i])), 10)
		case triton.INT16:
			b = strconv.AppendInt(b, int64(int16(binary.LittleEndian.Uint16(data[i:]))), 10)
		case triton.INT32:
			b = strconv.AppendInt(b, int64(int32(binary.LittleEndian.Uint32(data[i:]))), 10)
		case triton.INT64:
			b = strconv.AppendInt(b, int64(binary.LittleEndian.Uint64(data[i:])), 10)
		case triton.FP32:
			b = jsontext.AppendFloat(b, float64(math.Float32frombits(binary.LittleEndian.Uint32(data[i:]))), 32)
		case triton.FP64:
			b = jsontext.AppendFloat(b, math.Float64frombits(binary.LittleEndian.Uint64(data[i:])), 64)
		case triton.BYTES:
			l := int(binary.LittleEndian.Uint32(data[i:]))
			b = jsontext.AppendString(b, data[i+4:i+4+l], false)
			i += 4 + l
			continue
		default:
			return b, fmt.Errorf("%s data have no JSON form", dt)
		}
		i += size
	}
	return append(b, ']'), nil
}
