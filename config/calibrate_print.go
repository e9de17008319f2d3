package config

import (
	"fmt"
	"path/filepath"
	"reflect"

	"github.com/mergectl/react-triton/config/layer"
)

// YAML returns the configuration as a YAML file that LoadCalibrate reads
// back to the same values from any directory: every key, in the order of
// the schema, with durations written with their unit and paths made
// absolute (a file's relative paths are read relative to the file, a
// flag's were relative to the working directory). calibrate fit
// --print-config shows it.
func (c *Calibrate) YAML() ([]byte, error) {
	out := *c
	for key, ptr := range out.paths() {
		if *ptr == "" || filepath.IsAbs(*ptr) {
			continue
		}
		abs, err := filepath.Abs(*ptr)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		*ptr = abs
	}
	return layer.EncodeYAML(reflect.ValueOf(&out).Elem())
}
