package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/mergectl/react-triton/problem"
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
	var file *fileValues
	var decodeErrs problem.List // the file's keys that did not decode
	if path != "" {
		var err error
		if file, decodeErrs, err = readFile(path, new(Config)); errors.Is(err, errReading) {
			return nil, fmt.Errorf("config: %w", err)
		} else if err != nil {
			return nil, fmt.Errorf("config: %s: %w", path, err)
		}
	}
	cfg, err := load(file, decodeErrs, flags)
	if err != nil {
		if path == "" {
			return nil, fmt.Errorf("config: %w", err)
		}
		return nil, fmt.Errorf("config: %s: %w", path, err)
	}
	return cfg, nil
}

// load layers the defaults, the file, the environment and flags, then
// validates the result.
func load(file *fileValues, decodeErrs problem.List, flags *pflag.FlagSet) (*Config, error) {
	cfg := Default()
	l, err := newLayers(scalarKeys, cfg, file, flags, flagKeys)
	if err != nil {
		return nil, err
	}
	p := append(problem.List(nil), decodeErrs...)
	l.apply(cfg, &p)
	if file != nil {
		fc := file.root.Interface().(*Config)
		cfg.File = file.abs
		cfg.Components = fc.Components
		cfg.Models = fc.Models
		cfg.Experiments = fc.Experiments
		for i := range cfg.Components {
			file.resolve(&cfg.Components[i].Path)
		}
		tls, stls := &cfg.Triton.TLS, &cfg.Server.TLS
		l.resolvePaths(map[string]*string{
			"triton.tls.ca_file":        &tls.CAFile,
			"triton.tls.cert_file":      &tls.CertFile,
			"triton.tls.key_file":       &tls.KeyFile,
			"server.tls.cert_file":      &stls.CertFile,
			"server.tls.key_file":       &stls.KeyFile,
			"server.tls.client_ca_file": &stls.ClientCAFile,
			"management.token_file":     &cfg.Management.TokenFile,
		})
	}
	if len(cfg.Management.Allow) == 0 {
		cfg.Management.Allow = nil // none allowed, as by default
	}
	if len(cfg.Components) == 1 {
		for i := range cfg.Models {
			if cfg.Models[i].Components == "" {
				cfg.Models[i].Components = cfg.Components[0].Name
			}
		}
	}
	var verr problem.List
	if err := cfg.Validate(); errors.As(err, &verr) {
		p = append(p, unmasked(decodeErrs, verr)...)
	} else if err != nil {
		return nil, err
	}
	if err := l.finish(p); err != nil {
		return nil, err
	}
	return cfg, nil
}

// unmasked drops the validation problems that a key which did not decode
// explains, and keeps every other, so that one pass reports them all: a
// value that did not decode (a list given as a number, an entry given as a
// string) explains every problem under it; an unknown key (a typo'd
// "outptu") explains what its parent lacks ("output: required"), and a
// top-level key that did not decode what any part lacks (the sections
// depend on each other: no components entry, no model can name one). An
// unknown task in a preset beside a typo still shows.
func unmasked(decodeErrs, errs problem.List) problem.List {
	if len(decodeErrs) == 0 {
		return errs
	}
	var values []string          // paths whose values did not decode
	parents := map[string]bool{} // holders of an unknown key
	topLevel := false            // a top-level key did not decode
	for _, fe := range decodeErrs {
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
