package layer

import (
	"bytes"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/mergectl/react-triton/internal/bytesize"
)

// EncodeYAML writes a configuration value, a struct, as YAML by node:
// every key of the struct in the order of its fields, keyed by their yaml
// tags, durations and sizes with their unit, times in RFC 3339, a nil list
// or map as null. It is what --print-config prints.
func EncodeYAML(v reflect.Value) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(node(v)); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// node builds the YAML node of a configuration value, keyed by the
// yaml tags of its structs.
func node(v reflect.Value) *yaml.Node {
	scalar := func(tag, s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: s} }
	switch {
	case v.Type() == reflect.TypeFor[time.Duration]():
		return scalar("!!str", time.Duration(v.Int()).String())
	case v.Type() == reflect.TypeFor[bytesize.Size]():
		return scalar("!!str", bytesize.Size(v.Int()).String())
	case v.Type() == reflect.TypeFor[time.Time]():
		if t := v.Interface().(time.Time); !t.IsZero() {
			return scalar("!!str", t.Format(time.RFC3339))
		}
		return scalar("!!null", "null")
	}
	switch v.Kind() {
	case reflect.Struct:
		n := &yaml.Node{Kind: yaml.MappingNode}
		for i := range v.NumField() {
			if name := TagName(v.Type().Field(i)); name != "" {
				n.Content = append(n.Content, scalar("!!str", name), node(v.Field(i)))
			}
		}
		return n
	case reflect.Map, reflect.Slice:
		if v.IsNil() {
			// Left out: an empty list or mapping that was given is [] or {}.
			return scalar("!!null", "null")
		}
	}
	switch v.Kind() {
	case reflect.Map:
		n := &yaml.Node{Kind: yaml.MappingNode}
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
		for _, k := range keys {
			n.Content = append(n.Content, scalar("!!str", k.String()), node(v.MapIndex(k)))
		}
		return n
	case reflect.Slice:
		n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for i := range v.Len() {
			n.Content = append(n.Content, node(v.Index(i)))
		}
		return n
	case reflect.Pointer:
		if v.IsNil() {
			return scalar("!!null", "null")
		}
		return node(v.Elem())
	case reflect.String:
		return scalar("!!str", v.String())
	case reflect.Bool:
		return scalar("!!bool", strconv.FormatBool(v.Bool()))
	case reflect.Int:
		return scalar("!!int", strconv.FormatInt(v.Int(), 10))
	case reflect.Float64:
		f := strconv.FormatFloat(v.Float(), 'g', -1, 64)
		if !strings.ContainsAny(f, ".eIN") {
			f += ".0" // so that YAML reads it back as a float
		}
		return scalar("!!float", f)
	}
	panic("config: no YAML for " + v.Type().String())
}
