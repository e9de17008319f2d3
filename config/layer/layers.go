package layer

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/mergectl/react-triton/internal/bytesize"
	"github.com/mergectl/react-triton/problem"
)

// The one layering engine of every command is viper: for each scalar key
// of a configuration, the default (SetDefault), the file (MergeConfigMap),
// the REACT_* environment (AutomaticEnv) and the flag that was set
// (BindPFlag), in rising precedence, and Get for the value that wins.
//
// The file itself is read by the strict decoder of decode.go, not by
// viper's ReadInConfig: viper lower-cases every map key, also inside
// lists (preset names, Triton tensor names would change), has no line
// numbers for a problem, and accepts unknown keys. The decoder hands
// viper the scalar keys it typed; lists of entries and maps go from the
// file to the configuration directly, as nothing else can set them.

// Layers is one configuration's values from the defaults, the file, the
// environment and the flags.
type Layers struct {
	v    *viper.Viper
	keys []Key
	file *File // nil without a file
	// sources name the flag that set a key ("--triton"), for the keys
	// set by the flags bound to viper and by the command's own adapters
	// (calibrate fit's --expert).
	Sources map[string]string
}

// ErrReading prefixes the error of a file that cannot be read.
var ErrReading = errors.New("reading")

// Open reads the configuration file a loader is given: path, or when
// path is "" the file of the --config flag (FlagConfig) in flags, when it
// was set; no file (nil) when neither names one. It returns the path it
// read, and the file and the keys that did not decode as ReadFile does;
// its error is already wrapped as Wrap wraps the loader's.
func Open(path string, flags *pflag.FlagSet, root any) (string, *File, problem.List, error) {
	if path == "" && flags != nil {
		if f := flags.Lookup(FlagConfig); f != nil && f.Changed {
			path = f.Value.String()
		}
	}
	if path == "" {
		return "", nil, nil, nil
	}
	file, bad, err := ReadFile(path, root)
	if err != nil {
		return path, nil, nil, Wrap(path, err)
	}
	return path, file, bad, nil
}

// Wrap prefixes a loader's error with "config: " and the path of its
// file, when it has one and the error does not already name it (a file
// that cannot be read).
func Wrap(path string, err error) error {
	if path == "" || errors.Is(err, ErrReading) {
		return fmt.Errorf("config: %w", err)
	}
	return fmt.Errorf("config: %s: %w", path, err)
}

// ReadFile reads the YAML file at path and decodes it strictly into a new
// value of root's type. Problems with keys and types are returned with
// the file's values as a problem.List; a file that cannot be read or
// parsed as YAML is an error.
func ReadFile(path string, root any) (*File, problem.List, error) {
	d, data, err := read(path)
	if err != nil {
		return nil, nil, err
	}
	d.root = reflect.New(reflect.TypeOf(root).Elem())
	if err := d.document(data, d.root.Elem()); err != nil {
		return nil, nil, err
	}
	return &d.File, d.errs, nil
}

// read reads the file at path for a new decoder.
func read(path string) (*decoder, []byte, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, nil, err
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is in the caller's prefix
		}
		return nil, nil, fmt.Errorf("%w %s: %w", ErrReading, path, err)
	}
	d := newDecoder()
	d.abs = abs
	return d, data, nil
}

// New feeds viper the keys' defaults (their values in defaults, a
// pointer to the configuration's struct, or none when defaults is nil),
// the file's values, the environment and the flags of fs that were set,
// each bound to the key flagKeys names for it.
func New(keys []Key, defaults any, file *File, fs *pflag.FlagSet, flagKeys map[string]string) (*Layers, error) {
	l := &Layers{v: viper.New(), keys: keys, file: file, Sources: map[string]string{}}
	if defaults != nil {
		for _, k := range keys {
			l.v.SetDefault(k.Name, k.Field(defaults).Interface())
		}
	}
	if file != nil {
		if err := l.v.MergeConfigMap(file.scalarMap(keys)); err != nil {
			return nil, err
		}
	}
	l.v.SetEnvPrefix(EnvPrefix)
	l.v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	l.v.AllowEmptyEnv(true)
	l.v.AutomaticEnv()
	if fs != nil {
		for name, key := range flagKeys {
			f := fs.Lookup(name)
			if f == nil || !f.Changed {
				continue
			}
			if err := l.v.BindPFlag(key, f); err != nil {
				return nil, fmt.Errorf("binding --%s: %w", name, err)
			}
			l.Sources[key] = "--" + name
		}
	}
	return l, nil
}

// Apply sets every key of the configuration root points to to the value
// viper found for it, recording a problem for a value that does not
// parse. It reports variables named after a section first.
func (l *Layers) Apply(root any, p *problem.List) {
	l.Visit(p, func(k Key, raw any, _ string) error { return assign(k.Field(root), raw) })
}

// Visit calls set, for each key in turn that has a value, with the value
// viper found for it and where that came from: "--flag" or "$VARIABLE",
// or "" for the file or a default. The value is a default, a value the
// file decoder typed (ReadFile) or the strings of a named key (ReadKeys),
// a variable's string, or a flag's value. An error set returns is a
// problem with the key, from that source. Variables named after a section
// are reported first. Apply is Visit for a configuration's struct; a
// command whose keys are its flags sets each flag.
func (l *Layers) Visit(p *problem.List, set func(k Key, raw any, source string) error) {
	l.checkSectionEnv(p)
	for _, k := range l.keys {
		raw := l.v.Get(k.Name)
		if raw == nil {
			continue // unset, or hidden by a section's variable: reported above
		}
		src := l.source(k.Name)
		if err := set(k, raw, src); err != nil {
			*p = append(*p, &problem.Problem{Path: k.Name, Msg: err.Error(), Source: src})
		}
	}
}

// ResolvePaths makes the relative paths that came from the file absolute,
// against the file's directory; a flag's or a variable's stay relative to
// the working directory.
func (l *Layers) ResolvePaths(paths map[string]*string) {
	if l.file == nil {
		return
	}
	for key, p := range paths {
		if l.source(key) == "" && l.file.set[key] {
			l.file.Resolve(p)
		}
	}
}

// Resolve makes a relative path from the file absolute, against the
// file's directory.
func (fv *File) Resolve(p *string) {
	if *p != "" && !filepath.IsAbs(*p) {
		*p = filepath.Join(filepath.Dir(fv.abs), *p)
	}
}

// checkSectionEnv reports variables named after a section, such as
// $REACT_TRITON: viper would let them hide every key of the section.
func (l *Layers) checkSectionEnv(p *problem.List) {
	seen := map[string]bool{}
	for _, k := range l.keys {
		for _, section := range problem.Parents(k.Name)[1:] {
			if seen[section] {
				continue
			}
			seen[section] = true
			if _, ok := os.LookupEnv(EnvVar(section)); ok {
				*p = append(*p, &problem.Problem{
					Path:   section,
					Msg:    fmt.Sprintf("a section cannot be set from the environment, only its keys (such as $%s): unset $%s", EnvVar(k.Name), EnvVar(section)),
					Source: "$" + EnvVar(section),
				})
			}
		}
	}
}

// source names the flag or environment variable that set the value at
// path, or one of its enclosing keys, "" when it comes from the file or
// the defaults. It follows the precedence viper applies.
func (l *Layers) source(path string) string {
	for _, key := range problem.Parents(path) {
		if src, ok := l.Sources[key]; ok {
			return src
		}
		if _, ok := os.LookupEnv(EnvVar(key)); ok && l.isKey(key) {
			return "$" + EnvVar(key)
		}
	}
	return ""
}

// isKey reports whether key is one of the configuration's scalar keys.
func (l *Layers) isKey(key string) bool {
	for _, k := range l.keys {
		if k.Name == key {
			return true
		}
	}
	return false
}

// locate fills in where the value of a problem came from: its flag or
// environment variable, or its line in the file (for a value missing from
// the file, the line of the closest enclosing key).
func (l *Layers) locate(p *problem.Problem) {
	if p.Line != 0 || p.Source != "" {
		return
	}
	if p.Source = l.source(p.Path); p.Source != "" || l.file == nil {
		return
	}
	for _, pp := range problem.Parents(p.Path) {
		if line, ok := l.file.lines[pp]; ok {
			p.Line = line
			return
		}
	}
}

// Finish returns the problems of a load, each located and in the order of
// the file, or nil.
func (l *Layers) Finish(p problem.List) error {
	if len(p) == 0 {
		return nil
	}
	for _, fe := range p {
		l.locate(fe)
	}
	p.SortByLine()
	return p.Err()
}

// scalarMap returns the keys the file sets, as the nested map viper
// takes: {"triton": {"grpc": "…", "tls": {"enabled": true}}}.
func (fv *File) scalarMap(keys []Key) map[string]any {
	m := map[string]any{}
	for _, k := range keys {
		if !fv.set[k.Name] {
			continue
		}
		parts := strings.Split(k.Name, ".")
		cur := m
		for _, part := range parts[:len(parts)-1] {
			next, ok := cur[part].(map[string]any)
			if !ok {
				next = map[string]any{}
				cur[part] = next
			}
			cur = next
		}
		cur[parts[len(parts)-1]] = fv.value(k)
	}
	return m
}

// value returns the file's value of key k: its field of the file's
// struct (ReadFile), or its strings (ReadKeys).
func (fv *File) value(k Key) any {
	if fv.named != nil {
		return fv.named[k.Name]
	}
	return k.Field(fv.root.Interface()).Interface()
}

// assign sets field f to the value viper found for it: a value of f's own
// type (a default, a value the file decoder already typed, a list flag),
// or a string from the environment or a flag, parsed here. A list from
// the environment is separated by commas.
func assign(f reflect.Value, raw any) error {
	rv := reflect.ValueOf(raw)
	if rv.IsValid() && rv.Type() == f.Type() {
		f.Set(rv)
		return nil
	}
	s, ok := raw.(string)
	if !ok {
		return fmt.Errorf("unexpected value %v of type %T", raw, raw)
	}
	switch f.Type() {
	case durationType:
		d, err := parseDuration(s)
		if err != nil {
			return err
		}
		f.SetInt(int64(d))
		return nil
	case byteSizeType:
		b, err := bytesize.Parse(s)
		if err != nil {
			return err
		}
		f.SetInt(int64(b))
		return nil
	}
	switch f.Kind() {
	case reflect.String:
		f.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("want true or false, got %q", s)
		}
		f.SetBool(b)
	case reflect.Int:
		i, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("want an integer, got %q", s)
		}
		f.SetInt(int64(i))
	case reflect.Float64:
		x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return fmt.Errorf("want a number, got %q", s)
		}
		f.SetFloat(x)
	case reflect.Slice:
		var items []string
		if strings.TrimSpace(s) != "" {
			items = strings.Split(s, ",")
		}
		list := reflect.MakeSlice(f.Type(), len(items), len(items))
		for i, item := range items {
			if err := assign(list.Index(i), strings.TrimSpace(item)); err != nil {
				return fmt.Errorf("item %d: %w", i+1, err)
			}
		}
		f.Set(list)
	default:
		return fmt.Errorf("no parsing for %v", f.Type())
	}
	return nil
}
