package backendmode

import (
	"net/http"
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/sidecar/internal/restapi"
	"github.com/mergectl/react-triton/triton/tritonhttp"
)

// HeaderValues returns ReACT's react-preference and react-preset headers
// of an HTTP request (the first value of each), as Readers.Parameters
// takes them.
func HeaderValues(h http.Header) control.Values { return control.ValuesFrom(h.Values) }

// SetGRPC returns a serialized ModelInferRequest with string parameters
// set, appended as map entries of its parameters field (4): the last
// entry of a key wins when the message is parsed, so the request is
// otherwise relayed byte for byte. Only ReACT's keys of params are set.
func SetGRPC(payload []byte, params map[string]string) []byte {
	out := append([]byte(nil), payload...)
	for _, k := range []string{control.KeyPreference, control.KeyPreset} {
		v, ok := params[k]
		if !ok {
			continue
		}
		var param []byte
		param = protowire.AppendTag(param, 3, protowire.BytesType) // string_param
		param = protowire.AppendString(param, v)
		var entry []byte
		entry = protowire.AppendTag(entry, 1, protowire.BytesType) // key
		entry = protowire.AppendString(entry, k)
		entry = protowire.AppendTag(entry, 2, protowire.BytesType) // value
		entry = protowire.AppendBytes(entry, param)
		out = protowire.AppendTag(out, 4, protowire.BytesType) // parameters
		out = protowire.AppendBytes(out, entry)
	}
	return out
}

// SetHTTP returns the body of an HTTP inference request for model, read
// and decompressed (body; raw when it is a raw binary request), with
// string parameters set in its JSON header, and updates the request's
// headers h to match: no Content-Encoding, and the new header's
// Inference-Header-Content-Length when the request has one. A raw binary
// request (Inference-Header-Content-Length: 0) has no JSON header to
// carry them: it is refused, as a body that cannot be edited is, with an
// INVALID_ARGUMENT status.
func SetHTTP(model string, h http.Header, body []byte, raw bool, params map[string]string) ([]byte, error) {
	if raw {
		return nil, status.Errorf(codes.InvalidArgument, "sidecar: model %q reads the react-preference and react-preset headers as request parameters, "+
			"which a raw binary request (Inference-Header-Content-Length: 0) cannot carry: send a JSON header", model)
	}
	hl, framed := h[http.CanonicalHeaderKey(restapi.HeaderContentLength)]
	opt := tritonhttp.Options{HasHeaderLength: framed}
	if framed && len(hl) > 0 {
		opt.HeaderLength = hl[0]
	}
	out, newLength, err := tritonhttp.SetParameters(body, opt, params)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "sidecar: %v", err)
	}
	h.Del("Content-Encoding")
	if newLength >= 0 {
		h.Set(restapi.HeaderContentLength, strconv.Itoa(newLength))
	}
	return out, nil
}
