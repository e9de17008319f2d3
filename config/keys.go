package config

import (
	"reflect"
	"regexp"
	"strconv"
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
	name, _, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
	if name == "-" || !f.IsExported() {
		return ""
	}
	return name
}

// plainKey matches map keys that paths write after a dot.
var plainKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// keyPath is the path of key key under path: "triton.grpc",
// "components[0].presets.balanced", or with a quoted key when it is not
// plain: `models[0].heads[0].outputs["scores:0"]`.
func keyPath(path, key string) string {
	if !plainKey.MatchString(key) {
		return path + "[" + strconv.Quote(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// indexPath is the path of the i-th element of the list at path.
func indexPath(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

// parentPaths returns path and its enclosing paths, innermost first:
// "models[0].backbone.output", "models[0].backbone", "models[0]", "models".
func parentPaths(path string) []string {
	out := []string{path}
	for i := len(path) - 1; i > 0; i-- {
		if path[i] == '.' || path[i] == '[' {
			out = append(out, path[:i])
		}
	}
	return out
}
