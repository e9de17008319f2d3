package config

import (
	"reflect"
	"strings"
)

// EnvPrefix prefixes the environment variables that override keys: key
// triton.grpc is $REACT_TRITON_GRPC, limits.max_request_bytes is
// $REACT_LIMITS_MAX_REQUEST_BYTES. The sidecar and every calibrate
// command share it, so a key of the same name means the same everywhere.
const EnvPrefix = "REACT"

// EnvVar returns the environment variable that overrides key, a dotted
// key such as "triton.tls.ca_file".
func EnvVar(key string) string {
	return EnvPrefix + "_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// scalarKey is a key that the defaults, the file, the environment and
// flags can all set: a scalar, or a list of scalars, of a struct section.
type scalarKey struct {
	name  string // dotted, as in the file: "triton.tls.ca_file"
	index []int  // field index in the configuration's struct
}

// field returns the key's field of the struct root points to.
func (k scalarKey) field(root any) reflect.Value {
	return reflect.ValueOf(root).Elem().FieldByIndex(k.index)
}

// scalarKeys are every scalar key of Config, in schema order.
var scalarKeys = keysOf(reflect.TypeFor[Config]())

// keysOf walks a configuration's struct type for its scalar keys: the
// scalars and lists of scalars of its struct sections. Lists of entries
// (components, models) and maps come from the file only.
func keysOf(t reflect.Type) []scalarKey {
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
			switch k := f.Type.Kind(); {
			case k == reflect.Struct && f.Type != timeType:
				walk(f.Type, prefix+name+".", idx)
			case k == reflect.Map, k == reflect.Pointer:
			case k == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct:
			default:
				keys = append(keys, scalarKey{name: prefix + name, index: idx})
			}
		}
	}
	walk(t, "", nil)
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
