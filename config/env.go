package config

import "github.com/mergectl/react-triton/config/layer"

// EnvPrefix prefixes the environment variables that override keys: key
// triton.grpc is $REACT_TRITON_GRPC. The sidecar and every calibrate
// command share it (layer.EnvPrefix).
const EnvPrefix = layer.EnvPrefix

// EnvVar returns the environment variable that overrides key, a dotted
// key such as "sample.limit" (layer.EnvVar).
func EnvVar(key string) string { return layer.EnvVar(key) }
