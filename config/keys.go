package config

import (
	"reflect"
	"strings"
)

// EnvPrefix prefixes the environment variables that override scalar keys:
// key triton.grpc is $REACT_TRITON_GRPC, limits.max_request_bytes is
// $REACT_LIMITS_MAX_REQUEST_BYTES.
const EnvPrefix = "REACT"

// EnvVar returns the environment variable that overrides key, a scalar key
// of the triton, listen, limits, cache or log sections such as
// "triton.tls.ca_file".
func EnvVar(key string) string {
	return EnvPrefix + "_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// scalarKey is a key of the non-list sections, which defaults, the
// environment and flags can set.
type scalarKey struct {
	name  string // dotted, as in the file: "triton.tls.ca_file"
	index []int  // field index in Config
}

// field returns the key's field of c.
func (k scalarKey) field(c *Config) reflect.Value {
	return reflect.ValueOf(c).Elem().FieldByIndex(k.index)
}

// scalarKeys are every scalar key of Config, in schema order.
var scalarKeys = collectScalarKeys()

// collectScalarKeys walks Config for the scalar fields of its struct
// sections, skipping the list sections (components, models).
func collectScalarKeys() []scalarKey {
	var keys []scalarKey
	var walk func(t reflect.Type, prefix string, index []int)
	walk = func(t reflect.Type, prefix string, index []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			name := tagName(f)
			if name == "" {
				continue
			}
			idx := append(append([]int(nil), index...), i)
			switch {
			case f.Type.Kind() == reflect.Struct:
				walk(f.Type, prefix+name+".", idx)
			case f.Type.Kind() == reflect.Slice || f.Type.Kind() == reflect.Map:
				// List sections come from the file only.
			default:
				keys = append(keys, scalarKey{name: prefix + name, index: idx})
			}
		}
	}
	walk(reflect.TypeFor[Config](), "", nil)
	return keys
}

// tagName returns the key of a struct field in the file, "" for a field
// that is not read from it.
func tagName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "-" || !f.IsExported() {
		return ""
	}
	return name
}
