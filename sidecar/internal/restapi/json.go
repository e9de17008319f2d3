package restapi

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/mergectl/react-triton/sidecar/passthrough"
)

// jsonMessage renders a protocol message the way Triton's HTTP endpoints
// render theirs (model metadata, configuration, statistics, the repository
// index): field names as in the .proto files, enums by name, and 64-bit
// integers as JSON numbers (protojson would quote them, and clients such as
// perf_analyzer read numbers). Scalar, repeated and map fields are written
// even when zero or empty, as Triton writes its statistics' counts; unset
// message fields and oneof members are left out.
// It returns a map ready for encoding/json.
func jsonMessage(m protoreflect.Message) map[string]any {
	out := make(map[string]any)
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		unsetMessage := fd.Message() != nil && !fd.IsList() && !fd.IsMap() && !m.Has(fd)
		if unsetMessage || (fd.ContainingOneof() != nil && !m.Has(fd)) {
			continue
		}
		out[string(fd.Name())] = jsonField(fd, m.Get(fd))
	}
	return out
}

// jsonField converts a field's value.
func jsonField(fd protoreflect.FieldDescriptor, v protoreflect.Value) any {
	switch {
	case fd.IsList():
		l := v.List()
		out := make([]any, l.Len())
		for i := range out {
			out[i] = jsonScalar(fd, l.Get(i))
		}
		return out
	case fd.IsMap():
		out := make(map[string]any)
		v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
			out[k.String()] = jsonScalar(fd.MapValue(), mv)
			return true
		})
		return out
	}
	return jsonScalar(fd, v)
}

// jsonScalar converts one value of a field's kind.
func jsonScalar(fd protoreflect.FieldDescriptor, v protoreflect.Value) any {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return jsonMessage(v.Message())
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return string(ev.Name())
		}
		return int32(v.Enum())
	case protoreflect.BytesKind:
		return base64.StdEncoding.EncodeToString(v.Bytes())
	}
	return v.Interface()
}

// writeJSONValue answers v as JSON with an HTTP status.
func writeJSONValue(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		passthrough.WriteHTTPError(w, http.StatusInternalServerError, "sidecar: encoding JSON: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(code)
	w.Write(b)
}

// WriteJSON answers a protocol message as Triton's JSON.
func WriteJSON(w http.ResponseWriter, m proto.Message) {
	writeJSONValue(w, http.StatusOK, jsonMessage(m.ProtoReflect()))
}
