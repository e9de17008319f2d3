// Package config reads and checks the configuration of the ReACT sidecar:
// the upstream Triton server, where the sidecar listens, its limits, the
// W_p cache, logging, management, the components files, the controllable
// models and the experiments.
//
// Load layers, from lowest to highest precedence, the defaults (Default),
// a YAML file, REACT_* environment variables (EnvVar names them) and the
// flags of BindFlags, with the engine every configuration of the module
// shares (config/layer), then calls Validate. The file is decoded
// strictly: unknown keys and values of the wrong type are problems. Every
// problem is reported at once, as a problem.List of problem.Problem, each
// with its path ("models[2].heads[0].model") and its line in the file or
// the variable or flag it came from. Config.YAML is what --print-config
// prints, and Load reads it back to the same values.
//
// example.yaml, next to this package's source, documents every key.
package config
