package tritonhttp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/mergectl/react-triton/triton/tritonhttp/internal/jsontext"
	"slices"
)

// SetParameters returns an HTTP inference request body with string request
// parameters set: added to the JSON header's "parameters" object, or
// replacing a member of the same key. The header's other members keep
// their values byte for byte (the header is re-encoded, its members
// ordered by key), and any binary data after it follows unchanged.
//
// opt says how the body is framed, as ParseRequestWith takes it (its
// limits are not checked again): the new header's length is returned for
// the request's Inference-Header-Content-Length, -1 when the request has
// none. A raw binary request (a header length of 0: no JSON header), a
// header that is not a JSON object, or whose parameters are not one, is a
// *RequestError.
func SetParameters(body []byte, opt Options, params map[string]string) ([]byte, int, error) {
	hl, err := headerSize(body, opt)
	if err != nil {
		return nil, 0, &RequestError{Msg: err.Error()}
	}
	if hl == 0 {
		return nil, 0, &RequestError{Msg: "a raw binary request (Inference-Header-Content-Length: 0) has no JSON header to carry parameters"}
	}
	var header map[string]json.RawMessage
	if err := json.Unmarshal(body[:hl], &header); err != nil || header == nil {
		return nil, 0, &RequestError{Msg: fmt.Sprintf("the request's JSON header is not an object: %v", err)}
	}
	members := map[string]json.RawMessage{}
	if p, ok := header["parameters"]; ok && !bytes.Equal(bytes.TrimSpace(p), []byte("null")) {
		if err := json.Unmarshal(p, &members); err != nil || members == nil {
			return nil, 0, &RequestError{Msg: fmt.Sprintf("the request's parameters are not an object: %v", err)}
		}
	}
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		members[k] = jsontext.AppendString(nil, params[k], true)
	}
	if header["parameters"], err = marshalRaw(members); err != nil {
		return nil, 0, err
	}
	out, err := marshalRaw(header)
	if err != nil {
		return nil, 0, err
	}
	newLength := len(out)
	out = append(out, body[hl:]...)
	if !opt.HasHeaderLength {
		newLength = -1
	}
	return out, newLength, nil
}

// marshalRaw encodes members as a JSON object without escaping HTML
// characters, so that their values stay as they were.
func marshalRaw(members map[string]json.RawMessage) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(members); err != nil {
		return nil, &RequestError{Msg: "re-encoding the request's JSON header: " + err.Error()}
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
