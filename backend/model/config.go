package model

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/internal/bytesize"
	"github.com/mergectl/react-triton/problem"
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/triton/modelinfo"
)

// The model configuration parameters the backend reads (config.pbtxt
// `parameters`, string values). Any other key is refused, so that a typo
// fails the load instead of being ignored. What they may hold is the rule
// of every surface, control.Settings.Check; this file translates the
// parameters' syntax.
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
	// ParamCacheMaxBytes bounds the memory of the per-request W_p kept, an
	// integer or a size with a unit ("64MiB"; default
	// DefaultCacheMaxBytes).
	ParamCacheMaxBytes = "cache_max_bytes"
	// ParamCacheSize, when positive, also bounds their number (default
	// DefaultCacheSize, 0: no bound beyond the bytes).
	ParamCacheSize = "cache_size"
	// ParamMaxPreferenceLength bounds a request's preference or preset
	// value, in bytes (default DefaultMaxPreferenceLength).
	ParamMaxPreferenceLength = "max_preference_length"
)

// Defaults of the optional parameters: those of every surface (package
// control).
const (
	DefaultCacheMaxBytes       = int64(control.DefaultCacheMaxBytes)
	DefaultCacheSize           = control.DefaultCacheSize
	DefaultMaxPreferenceLength = control.DefaultMaxPreferenceLength
)

// featureDatatype returns the protocol datatype of a model configuration's
// data_type ("TYPE_FP16" -> "FP16") when an embedding may have it
// (modelinfo.IsFeatureDatatype: the sidecar's and calibrate's rule too).
// It returns "", false for any other.
func featureDatatype(configType string) (string, bool) {
	if dt, ok := strings.CutPrefix(configType, "TYPE_"); ok && modelinfo.IsFeatureDatatype(dt) {
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
	// CacheMaxBytes and CacheSize bound the W_p cache (bytes, and entries
	// when positive), MaxPreferenceLength a request's preference.
	CacheMaxBytes       int64
	CacheSize           int
	MaxPreferenceLength int
	// Experiment is the model's A/B experiment over its preferences (the
	// experiment.* parameters), nil for none.
	Experiment *Experiment
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
// and checks it. It reports every problem at once, as a problem.List
// (formatted one per line, problem.List.Lines), each at its place
// ("parameters.beta", "input[0]"): with versionDir (the version directory,
// against which a relative components path is read; "" for none), the
// components file must be readable and the default preference and the
// presets are checked against the tasks in its header too, so that an
// unknown task shows beside every other problem (the file's whole check is
// Load's).
func ParseConfig(data []byte, versionDir string) (*Config, error) {
	var w wireConfig
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("model configuration: %w", err)
	}
	c := &Config{Name: w.Name, MaxBatchSize: w.MaxBatchSize, Presets: map[string]string{},
		CacheMaxBytes: DefaultCacheMaxBytes, CacheSize: DefaultCacheSize, MaxPreferenceLength: DefaultMaxPreferenceLength}
	var l problem.List
	c.parseTensors(&w, &l)
	params := c.parseParameters(w.Parameters)
	s := c.Settings()
	if versionDir != "" && c.Components != "" {
		s.Profiles[0].Components = c.componentsPath(versionDir)
	}
	params = append(params, s.Check(versionDir != "").Rename(c.parameterPath)...)
	// Arms given twice in experiment.arms share their parameters, and so
	// their problems: each once.
	seen := map[string]bool{}
	params = slices.DeleteFunc(params, func(p *problem.Problem) bool {
		dup := seen[p.Error()]
		seen[p.Error()] = true
		return dup
	})
	// The parameters in the order of their keys, a missing or unreadable
	// components file last.
	slices.SortStableFunc(params, func(a, b *problem.Problem) int {
		ac, bc := a.Path == "parameters."+ParamComponents, b.Path == "parameters."+ParamComponents
		switch {
		case ac != bc && ac:
			return 1
		case ac != bc:
			return -1
		}
		return strings.Compare(a.Path, b.Path)
	})
	l = append(l, params...)
	if len(l) > 0 {
		return nil, l.Lines()
	}
	return c, nil
}

// parseTensors reads the input and output tensors and checks them.
func (c *Config) parseTensors(w *wireConfig, l *problem.List) {
	tensor := func(kind string, ts []wireTensor) Tensor {
		if len(ts) != 1 {
			l.Add(kind, "a react model has exactly one %s (the embedding), not %d", kind, len(ts))
			return Tensor{}
		}
		where := kind + "[0]"
		t := Tensor{Name: ts[0].Name}
		dt, ok := featureDatatype(ts[0].DataType)
		if !ok {
			l.Add(where, "data_type %s: an embedding is TYPE_FP32, TYPE_FP16 or TYPE_BF16", ts[0].DataType)
		}
		t.Datatype = dt
		for _, d := range ts[0].Dims {
			text := strings.Trim(string(d), `"`)
			n, err := strconv.ParseInt(text, 10, 64)
			if err != nil {
				l.Add(where, "dims: %s is not an integer", d)
				return Tensor{Name: t.Name} // no further checks of its type and dims
			}
			t.Dims = append(t.Dims, n)
		}
		return t
	}
	c.Input = tensor("input", w.Input)
	c.Output = tensor("output", w.Output)
	if c.Input.Datatype != "" && c.Output.Datatype != "" && c.Input.Datatype != c.Output.Datatype {
		l.Add("output[0]", "data_type %s differs from the input's %s: the corrected embedding keeps its datatype", c.Output.Datatype, c.Input.Datatype)
	}
	if c.Input.Name != "" && c.Input.Name == c.Output.Name {
		l.Add("output[0]", "name %q is the input's name", c.Output.Name)
	}
	if w.MaxBatchSize < 0 {
		l.Add("max_batch_size", "%d is negative", w.MaxBatchSize)
	}
	for _, t := range []struct {
		kind string
		t    Tensor
	}{{"input[0]", c.Input}, {"output[0]", c.Output}} {
		if t.t.Datatype != "" && !dimsFit(t.t.Dims, w.MaxBatchSize) {
			if w.MaxBatchSize > 0 {
				l.Add(t.kind, "dims %v: with max_batch_size > 0 an embedding's dims are [D]", t.t.Dims)
			} else {
				l.Add(t.kind, "dims %v: with max_batch_size 0 an embedding's dims are [-1, D] or [B, D]", t.t.Dims)
			}
		}
	}
}

// parseParameters translates the parameters' strings into c, and returns
// the problems of their syntax: what they hold is checked by the rules.
func (c *Config) parseParameters(params map[string]struct {
	StringValue string `json:"string_value"`
}) problem.List {
	var out problem.List
	experiment := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(params)) {
		v := params[k].StringValue
		where := "parameters." + k
		switch {
		case k == ParamComponents:
			c.Components = v
		case k == ParamBeta:
			b, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				out.Add(where, "%q is not a number", v)
				continue
			}
			c.Beta = &b
		case k == ParamNormalization:
			c.Normalization = react.Normalization(v)
		case k == ParamDefaultPreference:
			c.DefaultPreference = v
		case strings.HasPrefix(k, ParamExperimentPrefix):
			experiment[k] = v
		case strings.HasPrefix(k, ParamPresetPrefix):
			name := strings.TrimPrefix(k, ParamPresetPrefix)
			if name == "" {
				out.Add(where, "a preset needs a name: preset.<name>")
				continue
			}
			c.Presets[name] = v
		case k == ParamCacheMaxBytes:
			n, err := bytesize.Parse(v)
			if err != nil {
				out.Add(where, "%v", err)
				continue
			}
			c.CacheMaxBytes = int64(n)
		case k == ParamCacheSize:
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				out.Add(where, "%q: want an integer ≥ 0", v)
				continue
			}
			c.CacheSize = n
		case k == ParamMaxPreferenceLength:
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				out.Add(where, "%q: want a positive integer", v)
				continue
			}
			c.MaxPreferenceLength = n
		default:
			out.Add(where, "unknown parameter (known: %s, %s, %s, %s, %s<name>, %s, %s, %s, %s<key>)", ParamComponents, ParamBeta,
				ParamNormalization, ParamDefaultPreference, ParamPresetPrefix, ParamCacheMaxBytes, ParamCacheSize, ParamMaxPreferenceLength,
				ParamExperimentPrefix)
		}
	}
	return append(out, c.parseExperiment(experiment)...)
}

// Settings returns what the configuration says about its profile, in the
// terms of control.Settings, whose Check holds the rules every surface
// shares.
func (c *Config) Settings() control.Settings {
	return control.Settings{
		Profiles: []control.ProfileSettings{{
			Name: c.Name, Components: c.Components, Beta: c.Beta, Normalize: string(c.Normalization),
			DefaultPreference: c.DefaultPreference, Presets: c.Presets,
		}},
		Experiments:         c.experimentSettings(),
		CacheMaxBytes:       c.CacheMaxBytes,
		CacheSize:           c.CacheSize,
		MaxPreferenceLength: c.MaxPreferenceLength,
	}
}

// parameterPath renames a path of control.Settings.Check to the parameter
// that holds the value: profiles[0].presets.<name> is parameters.preset.<name>,
// cache.max_bytes parameters.cache_max_bytes, experiments[0].arms[j].preset
// parameters.experiment.arm.<name>.preset.
func (c *Config) parameterPath(path string) string {
	const profile = "profiles[0]"
	if p, ok := c.armPath(path); ok {
		return p
	}
	if name, rest, ok := problem.CutKey(path, profile+".presets"); ok {
		return "parameters." + ParamPresetPrefix + name + rest
	}
	switch path {
	case profile + ".components":
		return "parameters." + ParamComponents
	case profile + ".normalize":
		return "parameters." + ParamNormalization
	case "cache.max_bytes":
		return "parameters." + ParamCacheMaxBytes
	case "cache.size":
		return "parameters." + ParamCacheSize
	}
	if rest, ok := strings.CutPrefix(path, profile+"."); ok {
		return "parameters." + rest
	}
	return "parameters." + path
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
