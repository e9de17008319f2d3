package config

import (
	"errors"
	"reflect"

	"github.com/spf13/pflag"

	"github.com/mergectl/react-triton/config/layer"
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
// Components, models, experiments, sampling's models and tasks, and the
// lists of the other sections (triton.forward_headers, management.allow)
// come from the file only.
// Relative paths in the file (components[].path, the triton.tls and
// server.tls files, management.token_file, sampling.checkpoint.dir) are resolved against the file's
// directory, and Config.File is set to its absolute path. When
// there is exactly one components entry, models that name none are given
// it.
//
// The file is decoded strictly: an unknown key or a value of the wrong
// type is an error, like every problem Validate finds. Such problems are
// returned together, wrapped with the file's name, as a problem.List in
// the order of the file.
func Load(path string, flags *pflag.FlagSet) (*Config, error) {
	path, file, decodeErrs, err := layer.Open(path, flags, new(Config))
	if err != nil {
		return nil, err
	}
	cfg, err := load(file, decodeErrs, flags)
	if err != nil {
		return nil, layer.Wrap(path, err)
	}
	return cfg, nil
}

// scalarKeys are every scalar key of Config, in schema order.
var scalarKeys = layer.Keys(reflect.TypeFor[Config]())

// load layers the defaults, the file, the environment and flags, then
// validates the result.
func load(file *layer.File, decodeErrs problem.List, flags *pflag.FlagSet) (*Config, error) {
	cfg := Default()
	l, err := layer.New(scalarKeys, cfg, file, flags, flagKeys)
	if err != nil {
		return nil, err
	}
	p := append(problem.List(nil), decodeErrs...)
	l.Apply(cfg, &p)
	if file != nil {
		fc := file.Values().(*Config)
		cfg.File = file.Path()
		cfg.Components = fc.Components
		cfg.Models = fc.Models
		cfg.Experiments = fc.Experiments
		cfg.Sampling.Models = fc.Sampling.Models
		cfg.Sampling.Tasks = fc.Sampling.Tasks
		for i := range cfg.Components {
			file.Resolve(&cfg.Components[i].Path)
		}
		tls, stls := &cfg.Triton.TLS, &cfg.Server.TLS
		l.ResolvePaths(map[string]*string{
			"triton.tls.ca_file":        &tls.CAFile,
			"triton.tls.cert_file":      &tls.CertFile,
			"triton.tls.key_file":       &tls.KeyFile,
			"server.tls.cert_file":      &stls.CertFile,
			"server.tls.key_file":       &stls.KeyFile,
			"server.tls.client_ca_file": &stls.ClientCAFile,
			"management.token_file":     &cfg.Management.TokenFile,
			"sampling.checkpoint.dir":   &cfg.Sampling.Checkpoint.Dir,
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
		p = append(p, layer.Unmasked(decodeErrs, verr)...)
	} else if err != nil {
		return nil, err
	}
	if err := l.Finish(p); err != nil {
		return nil, err
	}
	return cfg, nil
}
