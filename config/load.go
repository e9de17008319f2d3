package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/mergectl/react-triton/problem"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// Load reads the configuration, applies the defaults, resolves relative
// paths, and validates the result.
//
// The values come, from lowest to highest precedence, from the defaults,
// the YAML file at path, the environment and flags:
//
//   - path "" reads no file, unless flags holds a --config flag that was
//     set (see BindFlags); then that file is read;
//   - every scalar key of the triton, listen, limits, cache and log
//     sections can be overridden by an environment variable named after it
//     (see EnvVar): REACT_TRITON_GRPC, REACT_LIMITS_MAX_REQUEST_BYTES; a
//     variable set to "" counts as set;
//   - flags, when not nil, are the flags of BindFlags; those that were set
//     override their key.
//
// Components, models, experiments and the lists of the other sections
// (triton.forward_headers, management.allow) come from the file only.
// Relative paths in the file (components[].path, the triton.tls and
// server.tls files, management.token_file) are resolved against the file's
// directory, and Config.File is set to its absolute path. When
// there is exactly one components entry, models that name none are given
// it.
//
// The file is decoded strictly: an unknown key or a value of the wrong
// type is an error, like every problem Validate finds. Such problems are
// returned together, wrapped with the file's name, as a problem.List in
// the order of the file.
func Load(path string, flags *pflag.FlagSet) (*Config, error) {
	if path == "" && flags != nil {
		if f := flags.Lookup(FlagConfig); f != nil && f.Changed {
			path = f.Value.String()
		}
	}
	l := &loader{flags: map[string]string{}}
	if path != "" {
		if err := l.readFile(path); err != nil {
			return nil, err
		}
	}
	cfg, err := l.load(flags)
	if err != nil {
		if path == "" {
			return nil, fmt.Errorf("config: %w", err)
		}
		return nil, fmt.Errorf("config: %s: %w", path, err)
	}
	return cfg, nil
}

// loader holds the state of one Load.
type loader struct {
	file *fileValues // nil when there is no file
	// decodeErrs are the file's keys that did not decode (unknown keys,
	// wrong types); the rest of the file is still loaded and validated.
	decodeErrs problem.List
	absPath    string            // the file's absolute path
	flags      map[string]string // key → name of the flag that set it
}

// readFile reads and decodes the file at path.
func (l *loader) readFile(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("config: %s: %w", path, err)
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is in our own message
		}
		return fmt.Errorf("config: reading %s: %w", path, err)
	}
	fv, err := decodeFile(data)
	var fieldErrs problem.List
	if err != nil && (fv == nil || !errors.As(err, &fieldErrs)) {
		return fmt.Errorf("config: %s: %w", path, err)
	}
	l.file, l.absPath = fv, abs
	l.decodeErrs = fieldErrs
	return nil
}

// load layers the defaults, the file, the environment and flags, then
// validates the result.
func (l *loader) load(flags *pflag.FlagSet) (*Config, error) {
	cfg := Default()
	v := viper.New()
	for _, k := range scalarKeys {
		v.SetDefault(k.name, k.field(cfg).Interface())
	}
	if l.file != nil {
		// The file's scalar keys, already typed by the strict decoder, are
		// viper's config layer; the lists bypass viper (see decode.go).
		if err := v.MergeConfigMap(l.file.scalarMap()); err != nil {
			return nil, err
		}
		cfg.File = l.absPath
		cfg.Components = l.file.cfg.Components
		cfg.Models = l.file.cfg.Models
		cfg.Experiments = l.file.cfg.Experiments
		// Lists inside the scalar sections come from the file too, when
		// it has them (an empty list included).
		if _, ok := l.file.lines["triton.forward_headers"]; ok {
			cfg.Triton.ForwardHeaders = l.file.cfg.Triton.ForwardHeaders
		}
		if len(l.file.cfg.Management.Allow) > 0 {
			cfg.Management.Allow = l.file.cfg.Management.Allow
		}
	}
	v.SetEnvPrefix(EnvPrefix)
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	v.AllowEmptyEnv(true)
	v.AutomaticEnv()
	if flags != nil {
		for name, key := range flagKeys {
			f := flags.Lookup(name)
			if f == nil || !f.Changed {
				continue
			}
			if err := v.BindPFlag(key, f); err != nil {
				return nil, fmt.Errorf("binding --%s: %w", name, err)
			}
			l.flags[key] = name
		}
	}

	var p problem.List
	p = append(p, l.decodeErrs...)
	l.checkSectionEnv(&p)
	for _, k := range scalarKeys {
		raw := v.Get(k.name)
		if raw == nil {
			continue // hidden by a section's variable: reported above
		}
		if err := assign(k.field(cfg), raw); err != nil {
			p = append(p, &problem.Problem{Path: k.name, Msg: err.Error()})
		}
	}
	l.resolvePaths(cfg)
	if len(cfg.Components) == 1 {
		for i := range cfg.Models {
			if cfg.Models[i].Components == "" {
				cfg.Models[i].Components = cfg.Components[0].Name
			}
		}
	}
	var verr problem.List
	if err := cfg.Validate(); errors.As(err, &verr) {
		if len(l.decodeErrs) > 0 {
			verr = l.unmasked(verr)
		}
		p = append(p, verr...)
	} else if err != nil {
		return nil, err
	}
	if len(p) == 0 {
		return cfg, nil
	}
	for _, fe := range p {
		l.locate(fe)
	}
	p.SortByLine()
	return nil, p.Err()
}

// unmasked drops the validation problems that a key which did not decode
// explains, and keeps every other, so that one pass reports them all: a
// value that did not decode (a list given as a number, an entry given as a
// string) explains every problem under it; an unknown key (a typo'd
// "outptu") explains what its parent lacks ("output: required"), and a
// top-level key that did not decode what any part lacks (the sections
// depend on each other: no components entry, no model can name one). An
// unknown task in a preset beside a typo still shows.
func (l *loader) unmasked(errs problem.List) problem.List {
	var values []string          // paths whose values did not decode
	parents := map[string]bool{} // holders of an unknown key
	topLevel := false            // a top-level key did not decode
	for _, fe := range l.decodeErrs {
		topLevel = topLevel || topSection(fe.Path) == fe.Path
		if strings.HasPrefix(fe.Msg, "unknown key") {
			parents[parentPath(fe.Path)] = true
		} else {
			values = append(values, fe.Path)
		}
	}
	var out problem.List
	for _, fe := range errs {
		if slices.ContainsFunc(values, func(v string) bool { return under(fe.Path, v) }) {
			continue
		}
		lacks := strings.Contains(fe.Msg, "required")
		if lacks && (topLevel || parents[parentPath(fe.Path)]) {
			continue
		}
		out = append(out, fe)
	}
	return out
}

// under reports whether path is root or a key or element below it.
func under(path, root string) bool {
	rest, ok := strings.CutPrefix(path, root)
	return ok && (rest == "" || rest[0] == '.' || rest[0] == '[')
}

// parentPath returns the path of what holds the key at path:
// "models[0].backbone" for "models[0].backbone.output", "models[0]" for
// "models[0].heads", "" for a top-level key.
func parentPath(path string) string {
	if i := strings.LastIndexAny(path, ".["); i >= 0 {
		return path[:i]
	}
	return ""
}

// topSection returns the top-level key of a path: "models" for
// "models[0].backbone.output", "limits" for "limits.max_batch_size".
func topSection(path string) string {
	if i := strings.IndexAny(path, ".["); i >= 0 {
		return path[:i]
	}
	return path
}

// resolvePaths makes the relative paths that came from the file absolute,
// against the file's directory.
func (l *loader) resolvePaths(cfg *Config) {
	if l.file == nil {
		return
	}
	dir := filepath.Dir(l.absPath)
	resolve := func(p *string) {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	for i := range cfg.Components {
		resolve(&cfg.Components[i].Path)
	}
	tls, stls := &cfg.Triton.TLS, &cfg.Server.TLS
	for key, p := range map[string]*string{
		"triton.tls.ca_file":        &tls.CAFile,
		"triton.tls.cert_file":      &tls.CertFile,
		"triton.tls.key_file":       &tls.KeyFile,
		"server.tls.cert_file":      &stls.CertFile,
		"server.tls.key_file":       &stls.KeyFile,
		"server.tls.client_ca_file": &stls.ClientCAFile,
		"management.token_file":     &cfg.Management.TokenFile,
	} {
		if l.source(key) == "" && l.file.set[key] {
			resolve(p)
		}
	}
}

// checkSectionEnv reports variables named after a section, such as
// $REACT_TRITON: viper would let them hide every key of the section.
func (l *loader) checkSectionEnv(p *problem.List) {
	seen := map[string]bool{}
	for _, k := range scalarKeys {
		for _, section := range problem.Parents(k.name)[1:] {
			if seen[section] {
				continue
			}
			seen[section] = true
			if _, ok := os.LookupEnv(EnvVar(section)); ok {
				*p = append(*p, &problem.Problem{
					Path:   section,
					Msg:    fmt.Sprintf("a section cannot be set from the environment, only its keys (such as $%s): unset $%s", EnvVar(k.name), EnvVar(section)),
					Source: "$" + EnvVar(section),
				})
			}
		}
	}
}

// source names the flag or environment variable that sets the scalar key,
// "" when its value comes from the file or the defaults. It follows the
// precedence viper applies.
func (l *loader) source(key string) string {
	if name, ok := l.flags[key]; ok {
		return "--" + name
	}
	if _, ok := os.LookupEnv(EnvVar(key)); ok && isScalarKey(key) {
		return "$" + EnvVar(key)
	}
	return ""
}

// locate fills in where the value of a problem came from: its flag or
// environment variable, or its line in the file (for a value missing from
// the file, the line of the closest enclosing key).
func (l *loader) locate(fe *problem.Problem) {
	if fe.Line != 0 || fe.Source != "" {
		return
	}
	if fe.Source = l.source(fe.Path); fe.Source != "" || l.file == nil {
		return
	}
	for _, p := range problem.Parents(fe.Path) {
		if line, ok := l.file.lines[p]; ok {
			fe.Line = line
			return
		}
	}
}

// isScalarKey reports whether key is one of scalarKeys.
func isScalarKey(key string) bool {
	for _, k := range scalarKeys {
		if k.name == key {
			return true
		}
	}
	return false
}

// scalarMap returns the scalar keys the file sets, as the nested map viper
// takes: {"triton": {"grpc": "…", "tls": {"enabled": true}}}.
func (fv *fileValues) scalarMap() map[string]any {
	m := map[string]any{}
	for _, k := range scalarKeys {
		if !fv.set[k.name] {
			continue
		}
		parts := strings.Split(k.name, ".")
		cur := m
		for _, part := range parts[:len(parts)-1] {
			next, ok := cur[part].(map[string]any)
			if !ok {
				next = map[string]any{}
				cur[part] = next
			}
			cur = next
		}
		cur[parts[len(parts)-1]] = k.field(&fv.cfg).Interface()
	}
	return m
}

// assign sets field f to the value viper found for it: a value of f's own
// type (a default, or a value the file decoder already typed), or a string
// from the environment or a flag, parsed here.
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
		b, err := ParseByteSize(s)
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
	default:
		return fmt.Errorf("no parsing for %v", f.Type())
	}
	return nil
}
