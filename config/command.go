package config

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/mergectl/react-triton/config/layer"
	"github.com/mergectl/react-triton/problem"
)

// CommandFlags describes a command whose configuration is its flags, such
// as calibrate eval, solve and upgrade: each flag is a key of a YAML file
// given with --config and of a REACT_* environment variable, layered by
// the engine of the sidecar's and calibrate fit's files (config/layer).
type CommandFlags struct {
	// Keys maps a flag to its key where the two differ by more than '-'
	// and '_': a flag another command shares, such as "triton" for key
	// "triton.grpc" (its meaning everywhere: Triton's gRPC address).
	Keys map[string]string
	// Paths are the flags whose values are file or directory paths: a
	// file's relative paths are read against its directory, and
	// --print-config writes them absolute.
	Paths []string
	// Labelled are the paths written [LABEL=]PATH.
	Labelled []string
	// Unset are the flags whose default means "not given" rather than a
	// value, such as solve's --beta (the components file's β): when no
	// layer sets them, --print-config writes them as null, and a null in
	// the file leaves a flag unset.
	Unset []string
	// Program are the flags of the whole program rather than the command,
	// such as calibrate's --linalg and --threads, which take effect before
	// the command reads its configuration: they are no keys.
	Program []string
}

// key returns the key of flag name.
func (c CommandFlags) key(name string) string {
	if k, ok := c.Keys[name]; ok {
		return k
	}
	return strings.ReplaceAll(name, "-", "_")
}

// Bind registers --config FILE and --print-config on fs. Call it after the
// command's own flags.
func (c CommandFlags) Bind(fs *pflag.FlagSet) {
	fs.String(FlagConfig, "", "configuration `FILE` (YAML, every flag a key: what --print-config writes); REACT_* variables beat it, flags beat both")
	fs.Bool(FlagPrintConfig, false, "print the configuration that would run, as YAML (every key, flags applied), and exit")
}

// keyed reports whether flag f is a key: every flag but --config,
// --print-config, --help, --quiet (the shorthand for progress: never,
// which Load applies), the Program flags and a deprecated flag, the old
// spelling of a key's flag, which the file and the environment do not
// know.
func (c CommandFlags) keyed(f *pflag.Flag) bool {
	switch f.Name {
	case FlagConfig, FlagPrintConfig, FlagQuiet, "help":
		return false
	}
	return f.Deprecated == "" && !isAlias(f) && !slices.Contains(c.Program, f.Name)
}

// Load layers the file of --config, the REACT_* environment and the
// command line over the flags' defaults, through the layering engine
// (config/layer: each keyed flag a key, the file read by layer.ReadKeys),
// and sets every flag the command line left out to the value that wins, so
// that the command reads its own flags as before. --quiet, where the
// command has BindProgressFlags', sets --progress to never over every
// layer. Every problem (an unknown key, a value that does not parse) is
// returned at once, with its line, flag or variable.
func (c CommandFlags) Load(fs *pflag.FlagSet) error {
	progressGiven := fs.Changed(FlagProgress)
	var (
		keys     []layer.Key
		names    []string
		flags    = map[string]*pflag.Flag{} // by key
		flagKeys = map[string]string{}      // by flag
	)
	fs.VisitAll(func(f *pflag.Flag) {
		if !c.keyed(f) {
			return
		}
		key := c.key(f.Name)
		keys, names = append(keys, layer.NamedKey(key)), append(names, key)
		flags[key], flagKeys[f.Name] = f, key
	})
	path, _ := fs.GetString(FlagConfig)
	var (
		file *layer.File
		p    problem.List
		dir  string
	)
	if path != "" {
		var err error
		if file, p, err = layer.ReadKeys(path, names); err != nil {
			return layer.Wrap(path, err)
		}
		dir = filepath.Dir(file.Path())
	}
	l, err := layer.New(keys, nil, file, fs, flagKeys)
	if err != nil {
		return layer.Wrap(path, err)
	}
	l.Visit(&p, func(k layer.Key, raw any, source string) error {
		f := flags[k.Name]
		if f.Changed {
			return nil // the command line wins, and the flag holds it
		}
		for _, s := range values(raw, isList(f)) {
			if source == "" {
				s = c.resolve(f.Name, dir, s) // from the file
			}
			if err := fs.Set(f.Name, s); err != nil {
				return fmt.Errorf("%q: want %s", s, want(f))
			}
		}
		return nil
	})
	if quiet, _ := fs.GetBool(FlagQuiet); quiet && fs.Lookup(FlagProgress) != nil {
		if progressGiven {
			p = append(p, &problem.Problem{Path: FlagProgress, Msg: "--progress and --quiet exclude each other", Source: "--" + FlagQuiet})
		} else if err := fs.Set(FlagProgress, ProgressNever); err != nil {
			p.Add(FlagProgress, "%v", err)
		}
	}
	if err := l.Finish(p); err != nil {
		return layer.Wrap(path, err)
	}
	return nil
}

// values returns what to give a flag's Set for a value the layers found:
// each of the file's values, or a variable's value, split at commas for a
// list flag.
func values(raw any, split bool) []string {
	switch x := raw.(type) {
	case []string:
		return x
	case []any:
		out := make([]string, len(x))
		for i, item := range x {
			out[i] = fmt.Sprint(item)
		}
		return out
	case string:
		if split {
			return strings.Split(x, ",")
		}
		return []string{x}
	}
	return []string{fmt.Sprint(raw)}
}

// want says what a flag takes, for a value that does not parse.
func want(f *pflag.Flag) string {
	t := strings.TrimSuffix(strings.TrimSuffix(f.Value.Type(), "Slice"), "Array")
	switch {
	case t == "bool":
		return "true or false"
	case t == "duration":
		return `a duration with a unit, like "30s" or "2m"`
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "an integer"
	case strings.HasPrefix(t, "float"):
		return "a number"
	}
	return "a value of type " + t
}

// isList reports whether f takes a list.
func isList(f *pflag.Flag) bool {
	_, ok := f.Value.(pflag.SliceValue)
	return ok
}

// resolve makes a path flag's relative value absolute against dir.
func (c CommandFlags) resolve(name, dir, s string) string {
	if !slices.Contains(c.Paths, name) || s == "" || dir == "" {
		return s
	}
	label, path := "", s
	if slices.Contains(c.Labelled, name) {
		if l, rest, ok := strings.Cut(s, "="); ok {
			label, path = l+"=", rest
		}
	}
	if filepath.IsAbs(path) {
		return s
	}
	return label + filepath.Join(dir, path)
}

// Print writes every key's value as YAML that Load reads back to the same
// values from any directory (paths made absolute, a dotted key nested
// under its section, an Unset flag that no layer set as null), when
// --print-config was given; it reports whether it did.
func (c CommandFlags) Print(w io.Writer, fs *pflag.FlagSet) (bool, error) {
	if ok, _ := fs.GetBool(FlagPrintConfig); !ok {
		return false, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return true, fmt.Errorf("--print-config: %w", err)
	}
	values := map[string]*yaml.Node{}
	fs.VisitAll(func(f *pflag.Flag) {
		if !c.keyed(f) {
			return
		}
		var val *yaml.Node
		switch sv, ok := f.Value.(pflag.SliceValue); {
		case !f.Changed && slices.Contains(c.Unset, f.Name):
			val = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
		case ok:
			val = &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
			for _, s := range sv.GetSlice() {
				val.Content = append(val.Content, scalarNode(f, c.resolve(f.Name, wd, s)))
			}
		default:
			val = scalarNode(f, c.resolve(f.Name, wd, f.Value.String()))
		}
		values[c.key(f.Name)] = val
	})
	root := &yaml.Node{Kind: yaml.MappingNode}
	for _, key := range slices.Sorted(maps.Keys(values)) {
		nest(root, strings.Split(key, "."), values[key])
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return true, err
	}
	if err := enc.Close(); err != nil {
		return true, err
	}
	_, err = w.Write(b.Bytes())
	return true, err
}

// nest adds the value of a key, split at its dots, to the mapping m, under
// the sections its first parts name (added once, where first met).
func nest(m *yaml.Node, parts []string, val *yaml.Node) {
	if len(parts) == 1 {
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: parts[0]}, val)
		return
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == parts[0] && m.Content[i+1].Kind == yaml.MappingNode {
			nest(m.Content[i+1], parts[1:], val)
			return
		}
	}
	section := &yaml.Node{Kind: yaml.MappingNode}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: parts[0]}, section)
	nest(section, parts[1:], val)
}

// scalarNode writes one value of flag f: numbers and booleans as such,
// everything else as a string.
func scalarNode(f *pflag.Flag, s string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
	t := strings.TrimSuffix(f.Value.Type(), "Slice")
	switch {
	case t == "bool":
		n.Tag = "!!bool"
	case strings.HasPrefix(t, "int") || strings.HasPrefix(t, "uint"):
		if _, err := strconv.ParseInt(s, 10, 64); err == nil {
			n.Tag = "!!int"
		}
	case strings.HasPrefix(t, "float"):
		if _, err := strconv.ParseFloat(s, 64); err == nil {
			n.Tag = "!!float"
		}
	}
	return n
}
