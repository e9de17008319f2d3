package config

import (
	"bytes"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// YAML returns the configuration as a YAML file that LoadCalibrate reads
// back to the same values from any directory: every key, in the order of
// the schema, with durations written with their unit and paths made
// absolute (a file's relative paths are read relative to the file, a
// flag's were relative to the working directory). calibrate fit
// --print-config shows it.
func (c *Calibrate) YAML() ([]byte, error) {
	out := *c
	for key, ptr := range out.paths() {
		if *ptr == "" || filepath.IsAbs(*ptr) {
			continue
		}
		abs, err := filepath.Abs(*ptr)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		*ptr = abs
	}
	return encodeYAML(reflect.ValueOf(&out).Elem())
}

// YAML returns the sidecar's configuration as a YAML file that Load reads
// back to the same values from any directory: every key, in the order of
// the schema, durations and sizes with their unit, and paths absolute.
// sidecar --print-config shows it.
func (c *Config) YAML() ([]byte, error) {
	out := *c
	out.Components = slices.Clone(c.Components)
	paths := []*string{&out.Triton.TLS.CAFile, &out.Triton.TLS.CertFile, &out.Triton.TLS.KeyFile,
		&out.Server.TLS.CertFile, &out.Server.TLS.KeyFile, &out.Server.TLS.ClientCAFile, &out.Management.TokenFile}
	for i := range out.Components {
		paths = append(paths, &out.Components[i].Path)
	}
	for _, p := range paths {
		if *p == "" || filepath.IsAbs(*p) {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return nil, err
		}
		*p = abs
	}
	return encodeYAML(reflect.ValueOf(&out).Elem())
}

// encodeYAML writes a configuration value as YAML, by node.
func encodeYAML(v reflect.Value) ([]byte, error) {
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
	case v.Type() == durationType:
		return scalar("!!str", time.Duration(v.Int()).String())
	case v.Type() == byteSizeType:
		return scalar("!!str", ByteSize(v.Int()).String())
	case v.Type() == timeType:
		if t := v.Interface().(time.Time); !t.IsZero() {
			return scalar("!!str", t.Format(time.RFC3339))
		}
		return scalar("!!null", "null")
	}
	switch v.Kind() {
	case reflect.Struct:
		n := &yaml.Node{Kind: yaml.MappingNode}
		for i := range v.NumField() {
			if name := tagName(v.Type().Field(i)); name != "" {
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
