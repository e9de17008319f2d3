package passthrough

import "google.golang.org/protobuf/encoding/protowire"

// StringField reads a string field of a serialized message without
// decoding the rest ("" when absent or unreadable); as in proto, the last
// occurrence wins. The seams read a request's model name (field 1) and id
// this way from the frames they relay.
func StringField(b []byte, field protowire.Number) string {
	value := ""
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return ""
		}
		b = b[n:]
		if num == field && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return ""
			}
			value = string(v)
			b = b[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return ""
		}
		b = b[n:]
	}
	return value
}
