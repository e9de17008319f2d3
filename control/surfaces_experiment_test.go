package control_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/mergectl/react-triton/backend/model"
	"github.com/mergectl/react-triton/control"
	sidecarconfig "github.com/mergectl/react-triton/sidecar/config"
)

// expArm is an experiment's arm as a user writes it.
type expArm struct {
	name       string
	weight     int
	preference string
	preset     string
}

// exp is an experiment as a user writes it, on either surface; "" leaves a
// value out.
type exp struct {
	name                    string
	arms                    []expArm
	traffic                 *float64
	start, end              string
	keyHeader, keyParameter string
}

// what a surface accepted: the experiment as package control resolves it,
// and where requests carry the key.
type accepted struct {
	spec                    control.ExperimentSpec
	keyHeader, keyParameter string
}

// TestExperimentSurfacesAgree writes the same experiment as the sidecar's
// YAML (its experiments[] entry) and as a react model's experiment.*
// parameters, and checks that both accept the same experiment or report
// the same problems, each at its own path (renamed to the parameter's:
// experiments[0].arms[j].preference is experiment.arm.<name>.preference).
// The rules they share are one code each: the traffic share, the key's
// header and parameter, the window, the names and the arms' preferences
// and presets. (The arms' weights and names the sidecar checks arm by arm,
// with a path for each; the backend, which reads them as one list, reports
// experiment.NewSplit's words: they are left out here.)
func TestExperimentSurfacesAgree(t *testing.T) {
	share := func(v float64) *float64 { return &v }
	good := exp{name: "first", traffic: share(0.25), start: "2026-03-01T09:00:00Z", end: "2026-03-15T10:00:00+01:00",
		keyHeader: "X-User-Id", keyParameter: "user_id",
		arms: []expArm{{"control", 0, "none", ""}, {"texture", 3, "", "texture"}, {"mixed", 1, "cars=1,dtd=1", ""}}}
	with := func(f func(e *exp)) exp {
		e := good
		e.arms = slices.Clone(good.arms)
		f(&e)
		return e
	}
	for _, tc := range []struct {
		name string
		e    exp
		want []string
	}{
		{"accepted", good, nil},
		{"a key parameter only, no window, all traffic", with(func(e *exp) { e.keyHeader, e.start, e.end, e.traffic = "", "", "", nil }), nil},
		{"traffic", with(func(e *exp) { e.traffic = share(1.5) }), []string{"traffic: traffic share 1.5: want a number in (0, 1]"}},
		{"no traffic", with(func(e *exp) { e.traffic = share(0) }), []string{"traffic: traffic share 0: want a number in (0, 1]"}},
		{"key names", with(func(e *exp) { e.keyHeader, e.keyParameter = "user id", "react-user" }), []string{
			`key.header: "user id" is not a header name`,
			`key.parameter: "react-user": react-* keys are ReACT's own`,
		}},
		{"reserved key names", with(func(e *exp) { e.keyHeader, e.keyParameter = "grpc-user", "priority" }), []string{
			`key.header: "grpc-user": gRPC reserves grpc-* keys and gives -bin keys binary values`,
			`key.parameter: "priority" is a parameter Triton reserves`,
		}},
		{"window", with(func(e *exp) { e.start, e.end = "2026-03-15T09:00:00Z", "2026-03-01T09:00:00Z" }), []string{
			"end: 2026-03-01T09:00:00Z is not after start 2026-03-15T09:00:00Z",
		}},
		{"name", with(func(e *exp) { e.name = "-x" }), []string{
			`name: "-x": want letters, digits, '_', '.' or '-', at most 64, not starting with '.' or '-'`,
		}},
		{"arms' preferences and presets", with(func(e *exp) {
			e.arms[0].preference = "cars=1,foo=1"
			e.arms[1].preference = "dtd=1"
			e.arms[2].preference = " "
		}), []string{
			`arm.control.preference: preference "cars=1,foo=1": unknown task "foo" (known: cars, dtd)`,
			"arm.texture.preset: set with preference: give one or the other",
			`arm.mixed.preference: blank: write a preference such as "cars=0.6,dtd=0.4", or "none"`,
		}},
		{"an arm with neither", with(func(e *exp) { e.arms[2].preference = "" }), []string{
			`arm.mixed: give the arm a preference (or "none") or a preset`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			comps := writeComponents(t, dir)
			side, sideProblems := readSidecarExperiment(t, dir, comps, tc.e)
			back, backProblems := readBackendExperiment(t, dir, tc.e)
			want := slices.Sorted(slices.Values(tc.want))
			for _, s := range []struct {
				name     string
				problems []string
			}{{"sidecar", sideProblems}, {"backend", backProblems}} {
				slices.Sort(s.problems)
				if !slices.Equal(s.problems, want) {
					t.Errorf("%s: problems\n  %s\nwant\n  %s", s.name, strings.Join(s.problems, "\n  "), strings.Join(want, "\n  "))
				}
			}
			if len(want) > 0 || t.Failed() {
				return
			}
			// The same instants, their locations aside.
			for _, a := range []*accepted{&side, &back} {
				a.spec.Start, a.spec.End = a.spec.Start.UTC(), a.spec.End.UTC()
			}
			if !reflect.DeepEqual(side, back) {
				t.Errorf("sidecar accepted %+v\nbackend accepted %+v", side, back)
			}
			if side.spec.Name != tc.e.name || len(side.spec.Arms) != len(tc.e.arms) {
				t.Errorf("accepted %+v, written %+v", side, tc.e)
			}
		})
	}
}

// readSidecarExperiment writes e into a sidecar configuration with one
// controllable model, loads it, and returns the experiment it accepted or
// its problems at the experiment's own paths.
func readSidecarExperiment(t *testing.T, dir, comps string, e exp) (accepted, []string) {
	t.Helper()
	var arms []any
	for _, a := range e.arms {
		arm := map[string]any{"name": a.name, "weight": a.weight}
		if a.preference != "" {
			arm["preference"] = a.preference
		}
		if a.preset != "" {
			arm["preset"] = a.preset
		}
		arms = append(arms, arm)
	}
	key := map[string]any{}
	if e.keyHeader != "" {
		key["header"] = e.keyHeader
	}
	if e.keyParameter != "" {
		key["parameter"] = e.keyParameter
	}
	entry := map[string]any{"name": e.name, "models": []string{"a"}, "key": key, "arms": arms}
	if e.traffic != nil {
		entry["traffic"] = *e.traffic
	}
	if e.start != "" {
		entry["start"] = e.start
	}
	if e.end != "" {
		entry["end"] = e.end
	}
	doc := map[string]any{
		"triton":     map[string]any{"grpc": "localhost:8101", "http": "localhost:8100"},
		"components": []any{map[string]any{"name": "c", "path": comps, "presets": map[string]string{"texture": "dtd=1"}}},
		"models": []any{map[string]any{"name": "a", "backbone": map[string]string{"model": "backbone", "output": "feature"},
			"heads": []any{map[string]string{"task": "t", "model": "head_t"}}}},
		"experiments": []any{entry},
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
		return accepted{}, renamed(t, err, func(path string) (string, bool) {
			rest, ok := strings.CutPrefix(path, "experiments[0].")
			if !ok {
				return "", false
			}
			if a, ok := strings.CutPrefix(rest, "arms["); ok {
				idx, field, _ := strings.Cut(a, "]")
				j, err := strconv.Atoi(idx)
				if err != nil || j >= len(e.arms) {
					return "", false
				}
				return "arm." + e.arms[j].name + field, true
			}
			return rest, true
		})
	}
	ce := cfg.Experiments[0]
	spec := control.ExperimentSpec{Name: ce.Name, Start: ce.Start, End: ce.End}
	if ce.Traffic != nil {
		spec.Traffic = *ce.Traffic
	}
	for _, a := range ce.Arms {
		spec.Arms = append(spec.Arms, control.ArmSpec{Name: a.Name, Weight: *a.Weight, Preference: a.Preference, Preset: a.Preset})
	}
	return accepted{spec: spec, keyHeader: ce.Key.Header, keyParameter: ce.Key.Parameter}, nil
}

// readBackendExperiment writes e as a react model's parameters, reads them
// as the backend does (model.ParseConfig, the components file in dir), and
// returns the experiment it accepted or its problems at the experiment's
// own paths.
func readBackendExperiment(t *testing.T, dir string, e exp) (accepted, []string) {
	t.Helper()
	params := map[string]string{"components": "components.safetensors", "preset.texture": "dtd=1",
		"experiment.name": e.name}
	var list []string
	for _, a := range e.arms {
		list = append(list, a.name+"="+strconv.Itoa(a.weight))
		if a.preference != "" {
			params["experiment.arm."+a.name+".preference"] = a.preference
		}
		if a.preset != "" {
			params["experiment.arm."+a.name+".preset"] = a.preset
		}
	}
	params["experiment.arms"] = strings.Join(list, ",")
	if e.traffic != nil {
		params["experiment.traffic"] = strconv.FormatFloat(*e.traffic, 'g', -1, 64)
	}
	for k, v := range map[string]string{"experiment.start": e.start, "experiment.end": e.end,
		"experiment.key.header": e.keyHeader, "experiment.key.parameter": e.keyParameter} {
		if v != "" {
			params[k] = v
		}
	}
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
		return accepted{}, renamed(t, err, func(path string) (string, bool) {
			return strings.CutPrefix(path, "parameters.experiment.")
		})
	}
	return accepted{spec: cfg.Experiment.ExperimentSpec, keyHeader: cfg.Experiment.KeyHeader, keyParameter: cfg.Experiment.KeyParameter}, nil
}
