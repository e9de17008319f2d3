// Package config reads and checks the configuration of the ReACT sidecar:
// the upstream Triton server, where the sidecar listens, its limits, the
// W_p cache, logging, the components files and the controllable models.
//
// Load layers, from lowest to highest precedence, the defaults (Default),
// a YAML file, REACT_* environment variables (EnvVar names them) and the
// flags of BindFlags, then calls Validate. The file is decoded strictly:
// unknown keys and values of the wrong type are errors. Every problem is
// reported at once, as an *Error listing one FieldError per problem with
// its path ("models[2].heads[0].model") and its line in the file or the
// variable or flag it came from.
//
// example.yaml, next to this package's source, documents every key.
package config
