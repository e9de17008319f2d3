package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/triton"
)

// The model configuration parameters the backend reads (config.pbtxt
// `parameters`, string values). Any other key is refused, so that a typo
// fails the load instead of being ignored.
const (
	// ParamComponents names the components file: absolute, or relative to
	// the directory of the model version being loaded (<model>/<version>/).
	ParamComponents = "components"
	// ParamBeta overrides the file's β.
	ParamBeta = "beta"
	// ParamNormalization overrides the file's normalisation: sum or mean.
	ParamNormalization = "normalization"
	// ParamDefaultPreference applies when a request names none; absent or
	// "none", such a request passes unchanged.
	ParamDefaultPreference = "default_preference"
	// ParamPresetPrefix starts a preset's key: preset.<name>.
	ParamPresetPrefix = "preset."
	// ParamCacheSize bounds the number of per-request W_p kept (default
	// DefaultCacheSize).
	ParamCacheSize = "cache_size"
	// ParamMaxPreferenceLength bounds a request's preference or preset
	// value, in bytes (default DefaultMaxPreferenceLength).
	ParamMaxPreferenceLength = "max_preference_length"
)

// Defaults of the optional parameters.
const (
	DefaultCacheSize           = 64
	DefaultMaxPreferenceLength = 4096
)

// featureDatatype returns the protocol datatype of a model configuration's
// data_type ("TYPE_FP16" -> "FP16") when an embedding may have it
// (triton.IsFeatureDatatype: the sidecar's and calibrate's rule too).
// It returns "", false for any other.
func featureDatatype(configType string) (string, bool) {
	if dt, ok := strings.CutPrefix(configType, "TYPE_"); ok && triton.IsFeatureDatatype(dt) {
		return dt, true
	}
	return "", false
}

// Tensor is one input or output of the model's configuration.
type Tensor struct {
	Name string
	// Datatype is FP32, FP16 or BF16.
	Datatype string
	// Dims are the configured dimensions, without the batch dimension
	// when MaxBatchSize > 0.
	Dims []int64
}

// Config is what the backend takes from a react model's configuration.
type Config struct {
	// Name is the model's name.
	Name string
	// MaxBatchSize is Triton's max_batch_size: > 0 when requests carry a
	// batch dimension that Triton adds to Dims.
	MaxBatchSize int
	// Input is the embedding to correct, Output the corrected embedding.
	Input, Output Tensor

	// Components is the components file's path as configured.
	Components string
	// Beta overrides the file's β; nil keeps it.
	Beta *float64
	// Normalization overrides the file's normalisation; "" keeps it.
	Normalization react.Normalization
	// DefaultPreference is the default preference spec ("" for none).
	DefaultPreference string
	// Presets maps preset names to preference specs.
	Presets map[string]string
	// CacheSize and MaxPreferenceLength bound the W_p cache and a request's
	// preference.
	CacheSize           int
	MaxPreferenceLength int
}

// wireConfig is the part of Triton's model configuration JSON (protobuf's
// JSON mapping of ModelConfig) that the backend reads.
type wireConfig struct {
	Name         string       `json:"name"`
	MaxBatchSize int          `json:"max_batch_size"`
	Input        []wireTensor `json:"input"`
	Output       []wireTensor `json:"output"`
	Parameters   map[string]struct {
		StringValue string `json:"string_value"`
	} `json:"parameters"`
}

type wireTensor struct {
	Name     string            `json:"name"`
	DataType string            `json:"data_type"`
	Dims     []json.RawMessage `json:"dims"` // int64: a string or a number in protobuf JSON
}

// ParseConfig reads a react model's configuration from Triton's JSON form
// and checks it. It reports every problem at once, each prefixed with where
// it is ("parameters.beta: ...", "input[0]: ..."), joined by errors.Join:
// with versionDir (the version directory, against which a relative
// components path is read; "" for none), the default preference and the
// presets are checked against the tasks in the components file's header
// too, so that an unknown task shows beside every other problem (the file's
// whole check is Load's).
func ParseConfig(data []byte, versionDir string) (*Config, error) {
	var w wireConfig
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("model configuration: %w", err)
	}
	c := &Config{Name: w.Name, MaxBatchSize: w.MaxBatchSize, Presets: map[string]string{},
		CacheSize: DefaultCacheSize, MaxPreferenceLength: DefaultMaxPreferenceLength}
	var errs []error
	fail := func(where, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", where, fmt.Sprintf(format, args...)))
	}

	tensor := func(kind string, ts []wireTensor) Tensor {
		if len(ts) != 1 {
			fail(kind, "a react model has exactly one %s (the embedding), not %d", kind, len(ts))
			return Tensor{}
		}
		where := kind + "[0]"
		t := Tensor{Name: ts[0].Name}
		dt, ok := featureDatatype(ts[0].DataType)
		if !ok {
			fail(where, "data_type %s: an embedding is TYPE_FP32, TYPE_FP16 or TYPE_BF16", ts[0].DataType)
		}
		t.Datatype = dt
		for _, d := range ts[0].Dims {
			text := strings.Trim(string(d), `"`)
			n, err := strconv.ParseInt(text, 10, 64)
			if err != nil {
				fail(where, "dims: %s is not an integer", d)
				return Tensor{Name: t.Name} // no further checks of its type and dims
			}
			t.Dims = append(t.Dims, n)
		}
		return t
	}
	c.Input = tensor("input", w.Input)
	c.Output = tensor("output", w.Output)
	if c.Input.Datatype != "" && c.Output.Datatype != "" && c.Input.Datatype != c.Output.Datatype {
		fail("output[0]", "data_type %s differs from the input's %s: the corrected embedding keeps its datatype", c.Output.Datatype, c.Input.Datatype)
	}
	if c.Input.Name != "" && c.Input.Name == c.Output.Name {
		fail("output[0]", "name %q is the input's name", c.Output.Name)
	}
	if w.MaxBatchSize < 0 {
		fail("max_batch_size", "%d is negative", w.MaxBatchSize)
	}
	for _, t := range []struct {
		kind string
		t    Tensor
	}{{"input[0]", c.Input}, {"output[0]", c.Output}} {
		if t.t.Datatype != "" && !dimsFit(t.t.Dims, w.MaxBatchSize) {
			if w.MaxBatchSize > 0 {
				fail(t.kind, "dims %v: with max_batch_size > 0 an embedding's dims are [D]", t.t.Dims)
			} else {
				fail(t.kind, "dims %v: with max_batch_size 0 an embedding's dims are [-1, D] or [B, D]", t.t.Dims)
			}
		}
	}

	keys := make([]string, 0, len(w.Parameters))
	for k := range w.Parameters {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := w.Parameters[k].StringValue
		where := "parameters." + k
		switch {
		case k == ParamComponents:
			c.Components = v
		case k == ParamBeta:
			b, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil {
				err = react.ValidateBeta(b)
			} else {
				err = fmt.Errorf("%q is not a number", v)
			}
			if err != nil {
				fail(where, "%v", err)
				continue
			}
			c.Beta = &b
		case k == ParamNormalization:
			n, err := react.ParseNormalization(v)
			if err != nil {
				fail(where, "%v", err)
				continue
			}
			c.Normalization = n
		case k == ParamDefaultPreference:
			c.DefaultPreference = v
		case strings.HasPrefix(k, ParamPresetPrefix):
			name := strings.TrimPrefix(k, ParamPresetPrefix)
			if name == "" {
				fail(where, "a preset needs a name: preset.<name>")
				continue
			}
			c.Presets[name] = v
		case k == ParamCacheSize, k == ParamMaxPreferenceLength:
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 1 {
				fail(where, "%q: want a positive integer", v)
				continue
			}
			if k == ParamCacheSize {
				c.CacheSize = n
			} else {
				c.MaxPreferenceLength = n
			}
		default:
			fail(where, "unknown parameter (known: %s, %s, %s, %s, %s<name>, %s, %s)", ParamComponents, ParamBeta,
				ParamNormalization, ParamDefaultPreference, ParamPresetPrefix, ParamCacheSize, ParamMaxPreferenceLength)
		}
	}
	if c.Components == "" {
		fail("parameters."+ParamComponents, "missing: name the components file (absolute, or relative to the version directory)")
	} else if versionDir != "" {
		if info, err := react.ReadFileInfo(c.componentsPath(versionDir)); err == nil {
			tasks := info.TaskNames()
			check := func(where, spec string) {
				if _, err := control.ParseSpec(spec, tasks); err != nil {
					fail(where, "%v", err)
				}
			}
			if c.DefaultPreference != "" {
				check("parameters."+ParamDefaultPreference, c.DefaultPreference)
			}
			for _, name := range slices.Sorted(maps.Keys(c.Presets)) {
				check("parameters."+ParamPresetPrefix+name, c.Presets[name])
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}

// dimsFit reports whether dims describe an embedding: [D] under batching,
// [-1 or B, D] without.
func dimsFit(dims []int64, maxBatch int) bool {
	if maxBatch > 0 {
		return len(dims) == 1 && dims[0] > 0
	}
	return len(dims) == 2 && (dims[0] == -1 || dims[0] > 0) && dims[1] > 0
}

// D returns the embedding dimension the configuration declares.
func (c *Config) D() int {
	d := c.Input.Dims[len(c.Input.Dims)-1]
	if d > math.MaxInt32 {
		return -1
	}
	return int(d)
}

// componentsPath is the components file's path: Components, relative to
// versionDir unless absolute.
func (c *Config) componentsPath(versionDir string) string {
	if filepath.IsAbs(c.Components) {
		return c.Components
	}
	return filepath.Join(versionDir, c.Components)
}
