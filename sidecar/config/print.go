package config

import (
	"path/filepath"
	"reflect"
	"slices"

	"github.com/mergectl/react-triton/config/layer"
)

// YAML returns the sidecar's configuration as a YAML file that Load reads
// back to the same values from any directory: every key, in the order of
// the schema, durations and sizes with their unit, and paths absolute.
// sidecar --print-config shows it.
func (c *Config) YAML() ([]byte, error) {
	out := *c
	out.Components = slices.Clone(c.Components)
	paths := []*string{&out.Triton.TLS.CAFile, &out.Triton.TLS.CertFile, &out.Triton.TLS.KeyFile,
		&out.Server.TLS.CertFile, &out.Server.TLS.KeyFile, &out.Server.TLS.ClientCAFile, &out.Management.TokenFile,
		&out.Sampling.Checkpoint.Dir}
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
	return layer.EncodeYAML(reflect.ValueOf(&out).Elem())
}
