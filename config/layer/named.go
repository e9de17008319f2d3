package layer

import (
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/mergectl/react-triton/problem"
)

// A command whose configuration is its flags (calibrate eval, solve, ...)
// has no struct: its keys are names, each a flag's, and a key's value in
// the file is a value or a list of values, kept as strings for the flag
// to parse. ReadKeys reads such a file with the decoder's rules (its
// lines, duplicate and merge keys, one document), NamedKey makes the keys
// New layers, and Layers.Visit hands each key's winning value to the
// command.

// NamedKey returns the key name of a configuration that has no struct: a
// file's value of it comes from ReadKeys, and it has no default (New's
// defaults is nil).
func NamedKey(name string) Key { return Key{Name: name} }

// ReadKeys reads the YAML file at path for a configuration whose keys are
// names, dotted: a mapping of them, where a mapping under a name that is
// not a key is a section of keys ("triton: {grpc: …}" is key
// "triton.grpc"). A key's value is a scalar or a list of scalars, kept as
// strings; a null leaves the key unset. An unknown key, with the key
// closest to it (Suggest), and a value of another shape are problems at
// their line, all returned at once; a file that cannot be read or parsed
// as YAML is an error, as for ReadFile.
func ReadKeys(path string, names []string) (*File, problem.List, error) {
	d, data, err := read(path)
	if err != nil {
		return nil, nil, err
	}
	d.named = map[string][]string{}
	doc, err := parse(data)
	if err != nil {
		return nil, nil, err
	}
	if doc != nil {
		n := doc
		for n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
			n = n.Content[0]
		}
		switch {
		case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null":
		case n.Kind != yaml.MappingNode:
			d.fail(n, "", "want a mapping of keys, got %s", Describe(n))
		default:
			d.keys(n, "", names)
		}
	}
	return &d.File, d.errs, nil
}

// keys decodes a mapping of the keys names under prefix ("" or a section
// followed by a dot).
func (d *decoder) keys(n *yaml.Node, prefix string, names []string) {
	d.entries(n, strings.TrimSuffix(prefix, "."), func(name string, kn, vn *yaml.Node) {
		key := prefix + name
		for vn.Kind == yaml.AliasNode {
			vn = vn.Alias
		}
		known := slices.Contains(names, key)
		switch {
		case vn.Kind == yaml.MappingNode && !known:
			d.keys(vn, key+".", names)
		case !known:
			if s := Suggest(key, names); s != "" {
				d.fail(kn, key, "unknown key, did you mean %q?", s)
			} else {
				d.fail(kn, key, "unknown key (want one of: %s)", strings.Join(names, ", "))
			}
		case vn.Kind == yaml.ScalarNode && vn.ShortTag() == "!!null":
			// not given: the key stays unset
		case vn.Kind == yaml.ScalarNode:
			d.setNamed(key, kn, []string{vn.Value})
		case vn.Kind == yaml.SequenceNode && slices.ContainsFunc(vn.Content, func(n *yaml.Node) bool { return n.Kind != yaml.ScalarNode }):
			d.fail(vn, key, "want a list of values")
		case vn.Kind == yaml.SequenceNode:
			list := make([]string, len(vn.Content))
			for i, item := range vn.Content {
				list[i] = item.Value
			}
			d.setNamed(key, kn, list)
		default:
			d.fail(vn, key, "want a value or a list of values, got %s", Describe(vn))
		}
	})
}

// setNamed records the values of a named key, set on the line of kn.
func (d *decoder) setNamed(key string, kn *yaml.Node, values []string) {
	d.named[key], d.lines[key], d.set[key] = values, kn.Line, true
}
