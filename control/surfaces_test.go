package control_test

import (
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/backend/model"
	"github.com/mergectl/react-triton/calibrate/upgrade"
	"github.com/mergectl/react-triton/config"
	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/problem"
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/componentsfile"
	sidecarconfig "github.com/mergectl/react-triton/sidecar/config"
)

// profile is one profile as a user writes it, on any surface; nil and ""
// leave a value out.
type profile struct {
	beta                   *float64
	normalize, defaultPref string
	presets                map[string]string
	cacheMaxBytes          string
	cacheSize, maxLength   *int
}

// A surface reads a profile written in its own syntax, and returns the
// settings it accepted, or its problems with the path of each renamed to
// the rules' own (profiles[0].beta, cache.size), so that the surfaces can
// be compared.
type surface struct {
	name string
	read func(t *testing.T, dir, comps string, p profile) (control.Settings, []string)
}

// TestSurfacesAgree feeds the same profile through each surface (the
// sidecar's YAML, the react backend's model parameters, calibrate's
// flags, and those flags as calibrate upgrade writes them into a react
// model's parameters) and checks that they accept the same values or report the same
// problems, each at its own path.
func TestSurfacesAgree(t *testing.T) {
	ptr := func(v float64) *float64 { return &v }
	n := func(v int) *int { return &v }
	cases := []struct {
		name string
		p    profile
		// want are the problems at the rules' paths, in any order; none
		// means the profile is accepted.
		want []string
	}{
		{name: "defaults", p: profile{}},
		{name: "everything", p: profile{beta: ptr(0.25), normalize: "mean", defaultPref: "cars=0.6,dtd=0.4",
			presets:       map[string]string{"Balanced": "cars=1,dtd=1", "v1.2": "none", "cars-only": "cars=1"},
			cacheMaxBytes: "64MiB", cacheSize: n(7), maxLength: n(100)}},
		{name: "bounds at their least", p: profile{cacheMaxBytes: "1", cacheSize: n(0), maxLength: n(1)}},
		{name: "preset named with spaces and unicode", p: profile{presets: map[string]string{"my preset with spaces and ünïcode": "cars=1"}},
			want: []string{`profiles[0].presets["my preset with spaces and ünïcode"]: preset name "my preset with spaces and ünïcode": want letters, digits, '_', '.' or '-', at most 64, not starting with '.' or '-'`}},
		{name: "blank values", p: profile{defaultPref: "  ", presets: map[string]string{"blank": " "}},
			want: []string{
				`profiles[0].default_preference: blank: write a preference such as "cars=0.6,dtd=0.4", or leave the key out for no correction`,
				`profiles[0].presets.blank: empty preference: write one such as "cars=0.6,dtd=0.4"`,
			}},
		{name: "unknown tasks", p: profile{defaultPref: "cars=1,foo=1", presets: map[string]string{"x": "bar=1"}},
			want: []string{
				`profiles[0].default_preference: preference "cars=1,foo=1": unknown task "foo" (known: cars, dtd)`,
				`profiles[0].presets.x: preference "bar=1": unknown task "bar" (known: cars, dtd)`,
			}},
		{name: "beta and normalisation", p: profile{beta: ptr(-1), normalize: "avg"},
			want: []string{
				"profiles[0].beta: invalid beta -1: want a finite number ≥ 0",
				`profiles[0].normalize: unknown normalization "avg" (want "sum" or "mean")`,
			}},
		{name: "bounds", p: profile{cacheMaxBytes: "0", cacheSize: n(-1), maxLength: n(0)},
			want: []string{
				"cache.max_bytes: must be positive, got 0",
				"cache.size: must be 0 (bounded by max_bytes only) or positive, got -1",
				"max_preference_length: must be at least 1, got 0",
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var first control.Settings
			for i, s := range surfaces {
				dir := t.TempDir()
				comps := writeComponents(t, dir)
				got, problems := s.read(t, dir, comps, tc.p)
				slices.Sort(problems)
				want := slices.Sorted(slices.Values(tc.want))
				if !slices.Equal(problems, want) {
					t.Errorf("%s: problems\n  %s\nwant\n  %s", s.name, strings.Join(problems, "\n  "), strings.Join(want, "\n  "))
					continue
				}
				if len(want) > 0 {
					continue
				}
				// The same values, but for where the file is and the
				// profile's name, which are the surface's.
				got.Profiles[0].Name, got.Profiles[0].Components = "", strings.TrimPrefix(got.Profiles[0].Components, dir)
				if len(got.Profiles[0].Presets) == 0 {
					got.Profiles[0].Presets = nil
				}
				if i == 0 {
					first = got
					if !reflect.DeepEqual(got, tc.p.settings()) {
						t.Errorf("%s accepted %+v, want %+v", s.name, got, tc.p.settings())
					}
				} else if !reflect.DeepEqual(got, first) {
					t.Errorf("%s accepted %+v\n%s accepted %+v", s.name, got, surfaces[0].name, first)
				}
			}
		})
	}
}

// settings returns what every surface must accept for p, computed from p
// and the defaults stated in docs/contracts.md, not from a surface.
func (p profile) settings() control.Settings {
	s := control.Settings{CacheMaxBytes: 128 << 20, CacheSize: 0, MaxPreferenceLength: 4096}
	if p.cacheMaxBytes != "" {
		s.CacheMaxBytes = map[string]int64{"64MiB": 64 << 20, "1": 1}[p.cacheMaxBytes]
	}
	if p.cacheSize != nil {
		s.CacheSize = *p.cacheSize
	}
	if p.maxLength != nil {
		s.MaxPreferenceLength = *p.maxLength
	}
	var presets map[string]string
	if len(p.presets) > 0 {
		presets = maps.Clone(p.presets)
	}
	s.Profiles = []control.ProfileSettings{{Components: "/components.safetensors", Beta: p.beta, Normalize: p.normalize,
		DefaultPreference: p.defaultPref, Presets: presets}}
	return s
}

// writeComponents writes a components file of tasks cars and dtd in dir.
func writeComponents(t *testing.T, dir string) string {
	t.Helper()
	c := &react.Components{D: 2, Beta: 0.1, Normalization: react.NormSum}
	for _, name := range []string{"cars", "dtd"} {
		c.Tasks = append(c.Tasks, &react.TaskStats{Name: name, N: 10, S: mat.NewDense(2, 2, []float64{1, 0, 0, 1}),
			G: mat.NewSymDense(2, []float64{2, 0, 0, 2}), WOrth: mat.NewDense(2, 2, []float64{1, 0, 0, 1})})
	}
	path := filepath.Join(dir, "components.safetensors")
	if err := componentsfile.Save(path, c); err != nil {
		t.Fatal(err)
	}
	return path
}

// renamed returns the problems of err with each path renamed by rename to
// the rules' own, failing the test when err is not a problem.List or a
// path has no counterpart.
func renamed(t *testing.T, err error, rename func(string) (string, bool)) []string {
	t.Helper()
	var l problem.List
	if !errors.As(err, &l) {
		t.Fatalf("%v (%T) is not a problem.List", err, err)
	}
	var out []string
	for _, p := range l {
		path, ok := rename(p.Path)
		if !ok {
			t.Errorf("problem at %q, which the rules do not have: %v", p.Path, p)
			continue
		}
		out = append(out, path+": "+p.Msg)
	}
	return out
}

// surfaces are the adapters of the rules, each with the path of every
// value in its own terms, as its documentation states.
var surfaces = []surface{
	{name: "sidecar YAML", read: func(t *testing.T, dir, comps string, p profile) (control.Settings, []string) {
		entry := map[string]any{"name": "c", "path": filepath.Base(comps)}
		if p.beta != nil {
			entry["beta"] = *p.beta
		}
		if p.normalize != "" {
			entry["normalize"] = p.normalize
		}
		if p.defaultPref != "" {
			entry["default_preference"] = p.defaultPref
		}
		if p.presets != nil {
			entry["presets"] = p.presets
		}
		doc := map[string]any{
			"triton":     map[string]any{"grpc": "localhost:8101", "http": "localhost:8100"},
			"components": []any{entry},
		}
		cache := map[string]any{}
		if p.cacheMaxBytes != "" {
			cache["max_bytes"] = p.cacheMaxBytes
		}
		if p.cacheSize != nil {
			cache["size"] = *p.cacheSize
		}
		if len(cache) > 0 {
			doc["cache"] = cache
		}
		if p.maxLength != nil {
			doc["limits"] = map[string]any{"max_preference_length": *p.maxLength}
		}
		text, err := yaml.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "sidecar.yaml")
		if err := os.WriteFile(path, text, 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := sidecarconfig.Load(path, nil)
		if err != nil {
			return control.Settings{}, renamed(t, err, func(path string) (string, bool) {
				if name, ok := strings.CutPrefix(path, "components[0].presets"); ok {
					return "profiles[0].presets" + name, true
				}
				canonical, ok := map[string]string{
					"components[0].path": "profiles[0].components", "components[0].beta": "profiles[0].beta",
					"components[0].normalize": "profiles[0].normalize", "components[0].default_preference": "profiles[0].default_preference",
					"cache.max_bytes": "cache.max_bytes", "cache.size": "cache.size",
					"limits.max_preference_length": "max_preference_length",
				}[path]
				return canonical, ok
			})
		}
		return cfg.Settings(), nil
	}},
	{name: "backend parameters", read: func(t *testing.T, dir, comps string, p profile) (control.Settings, []string) {
		params := map[string]string{"components": filepath.Base(comps)}
		if p.beta != nil {
			params["beta"] = strconv.FormatFloat(*p.beta, 'g', -1, 64)
		}
		if p.normalize != "" {
			params["normalization"] = p.normalize
		}
		if p.defaultPref != "" {
			params["default_preference"] = p.defaultPref
		}
		for name, spec := range p.presets {
			params["preset."+name] = spec
		}
		if p.cacheMaxBytes != "" {
			params["cache_max_bytes"] = p.cacheMaxBytes
		}
		if p.cacheSize != nil {
			params["cache_size"] = strconv.Itoa(*p.cacheSize)
		}
		if p.maxLength != nil {
			params["max_preference_length"] = strconv.Itoa(*p.maxLength)
		}
		return readParameters(t, dir, params)
	}},
	{name: "calibrate flags", read: func(t *testing.T, _, comps string, p profile) (control.Settings, []string) {
		return readFlags(t, p.flags(comps))
	}},
	{name: "calibrate upgrade", read: func(t *testing.T, dir, comps string, p profile) (control.Settings, []string) {
		// The flags as above, written by upgrade as the react model's
		// parameters, read back by the backend.
		s, problems := readFlags(t, p.flags(comps))
		if len(problems) > 0 {
			return s, problems
		}
		o := upgrade.Options{Profile: s}
		params := o.Parameters()
		params["components"] = filepath.Base(comps)
		return readParameters(t, dir, params)
	}},
}

// flags writes p as calibrate upgrade's flags (config.BindProfileFlags).
func (p profile) flags(comps string) []string {
	args := []string{"--components", comps}
	if p.beta != nil {
		args = append(args, "--beta", strconv.FormatFloat(*p.beta, 'g', -1, 64))
	}
	if p.normalize != "" {
		args = append(args, "--normalize", p.normalize)
	}
	if p.defaultPref != "" {
		args = append(args, "--default-preference", p.defaultPref)
	}
	for _, name := range slices.Sorted(maps.Keys(p.presets)) {
		args = append(args, "--preset", name+"="+p.presets[name])
	}
	if p.cacheMaxBytes != "" {
		args = append(args, "--cache-max-bytes", p.cacheMaxBytes)
	}
	if p.cacheSize != nil {
		args = append(args, "--cache-size", strconv.Itoa(*p.cacheSize))
	}
	if p.maxLength != nil {
		args = append(args, "--max-preference-length", strconv.Itoa(*p.maxLength))
	}
	return args
}

// readFlags reads a profile from the command line of calibrate upgrade
// (config.BindProfileFlags), and returns the settings it accepted or its
// problems at the rules' paths.
func readFlags(t *testing.T, args []string) (control.Settings, []string) {
	fs := pflag.NewFlagSet("upgrade", pflag.ContinueOnError)
	config.BindProfileFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	s, l := config.ProfileFlags(fs)
	if len(l) > 0 {
		return control.Settings{}, renamed(t, l, func(path string) (string, bool) {
			if name, ok := strings.CutPrefix(path, "--preset "); ok {
				if unquoted, err := strconv.Unquote(name); err == nil {
					name = unquoted
				}
				return problem.Key("profiles[0].presets", name), true
			}
			canonical, ok := map[string]string{
				"--components": "profiles[0].components", "--beta": "profiles[0].beta",
				"--normalize": "profiles[0].normalize", "--default-preference": "profiles[0].default_preference",
				"--cache-max-bytes": "cache.max_bytes", "--cache-size": "cache.size",
				"--max-preference-length": "max_preference_length",
			}[path]
			return canonical, ok
		})
	}
	return s, nil
}

// readParameters reads a react model's parameters as the backend does
// (model.ParseConfig), the components file read against dir, and returns
// the settings it accepted or its problems at the rules' paths.
func readParameters(t *testing.T, dir string, params map[string]string) (control.Settings, []string) {
	wire := map[string]any{"name": "react_c", "max_batch_size": 8,
		"input":  []any{map[string]any{"name": "embedding", "data_type": "TYPE_FP32", "dims": []string{"2"}}},
		"output": []any{map[string]any{"name": "corrected", "data_type": "TYPE_FP32", "dims": []string{"2"}}},
	}
	wp := map[string]any{}
	for k, v := range params {
		wp[k] = map[string]string{"string_value": v}
	}
	wire["parameters"] = wp
	data, err := json.Marshal(wire)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := model.ParseConfig(data, dir)
	if err != nil {
		return control.Settings{}, renamed(t, err, func(path string) (string, bool) {
			if name, ok := strings.CutPrefix(path, "parameters.preset."); ok {
				return problem.Key("profiles[0].presets", name), true
			}
			canonical, ok := map[string]string{
				"parameters.components": "profiles[0].components", "parameters.beta": "profiles[0].beta",
				"parameters.normalization": "profiles[0].normalize", "parameters.default_preference": "profiles[0].default_preference",
				"parameters.cache_max_bytes": "cache.max_bytes", "parameters.cache_size": "cache.size",
				"parameters.max_preference_length": "max_preference_length",
			}[path]
			return canonical, ok
		})
	}
	s := cfg.Settings()
	s.Profiles[0].Components = filepath.Join(dir, s.Profiles[0].Components)
	return s, nil
}
