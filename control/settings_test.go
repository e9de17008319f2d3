package control

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mergectl/react-triton/react/componentsfile"
)

// TestSettingsCheck checks each rule of a profile: what it accepts, and
// the problem, at its path, of what it refuses.
func TestSettingsCheck(t *testing.T) {
	dir := t.TempDir()
	comps := filepath.Join(dir, "c.safetensors")
	if err := componentsfile.Save(comps, testComponents(t, 4, 10, tasks3...)); err != nil {
		t.Fatal(err)
	}
	notFile := filepath.Join(dir, "sub")
	if err := os.Mkdir(notFile, 0o755); err != nil {
		t.Fatal(err)
	}
	beta := func(b float64) *float64 { return &b }
	good := func() Settings {
		s := DefaultSettings()
		s.Profiles = []ProfileSettings{{Name: "c", Components: comps, Beta: beta(0.5), Normalize: "mean",
			DefaultPreference: "cars=0.6, dtd=0.4", Presets: map[string]string{"Balanced": "cars=1,dtd=1", "v1.2": "none", "off": " none "}}}
		s.Experiments = []ExperimentSettings{{
			Arms: []ArmSettings{{Preference: "none"}, {Preset: "Balanced"}, {Preference: "svhn=1"}},
			Uses: []Use{{Model: "m", Profile: 0}, {Model: "gone", Profile: -1}},
		}}
		return s
	}
	for _, tc := range []struct {
		name  string
		files bool
		edit  func(s *Settings)
		want  []string // the problems, formatted
	}{
		{name: "good", files: true, edit: func(*Settings) {}},
		{name: "good without files", edit: func(s *Settings) { s.Profiles[0].Components = "nowhere.safetensors" }},
		{name: "bounds", edit: func(s *Settings) { s.CacheMaxBytes, s.CacheSize, s.MaxPreferenceLength = 0, -1, 0 }, want: []string{
			"cache.max_bytes: must be positive, got 0",
			"cache.size: must be 0 (bounded by max_bytes only) or positive, got -1",
			"max_preference_length: must be at least 1, got 0",
		}},
		{name: "bounds at their least", edit: func(s *Settings) { s.CacheMaxBytes, s.CacheSize, s.MaxPreferenceLength = 1, 0, 1 }},
		{name: "no components", edit: func(s *Settings) { s.Profiles[0].Components = "" }, want: []string{
			"profiles[0].components: required: the components file (safetensors) written by calibrate fit",
		}},
		{name: "components missing", files: true, edit: func(s *Settings) { s.Profiles[0].Components = filepath.Join(dir, "missing") }, want: []string{
			"profiles[0].components: cannot read " + filepath.Join(dir, "missing") + ": no such file or directory",
		}},
		{name: "components a directory", files: true, edit: func(s *Settings) { s.Profiles[0].Components = notFile }, want: []string{
			"profiles[0].components: " + notFile + " is not a regular file",
		}},
		{name: "beta and normalisation", edit: func(s *Settings) { s.Profiles[0].Beta, s.Profiles[0].Normalize = beta(-1), "avg" }, want: []string{
			"profiles[0].beta: invalid beta -1: want a finite number ≥ 0",
			`profiles[0].normalize: unknown normalization "avg" (want "sum" or "mean")`,
		}},
		{name: "blank default", edit: func(s *Settings) { s.Profiles[0].DefaultPreference = " \t" }, want: []string{
			`profiles[0].default_preference: blank: write a preference such as "cars=0.6,dtd=0.4", or leave the key out for no correction`,
		}},
		{name: "preset names and values", edit: func(s *Settings) {
			s.Profiles[0].Presets = map[string]string{"my preset with spaces and ünïcode": "cars=1", "-x": "cars=1", "blank": "  ", "empty": "", "Balanced": "none"}
		}, want: []string{
			`profiles[0].presets.-x: preset name "-x": want letters, digits, '_', '.' or '-', at most 64, not starting with '.' or '-'`,
			`profiles[0].presets.blank: empty preference: write one such as "cars=0.6,dtd=0.4"`,
			`profiles[0].presets.empty: empty preference: write one such as "cars=0.6,dtd=0.4"`,
			`profiles[0].presets["my preset with spaces and ünïcode"]: preset name "my preset with spaces and ünïcode": want letters, digits, '_', '.' or '-', at most 64, not starting with '.' or '-'`,
		}},
		{name: "unknown tasks need the file", edit: func(s *Settings) {
			s.Profiles[0].DefaultPreference, s.Profiles[0].Presets["x"] = "foo=1", "bar=1"
			s.Experiments[0].Arms[2].Preference = "baz=1"
		}},
		{name: "unknown tasks", files: true, edit: func(s *Settings) {
			s.Profiles[0].DefaultPreference, s.Profiles[0].Presets["x"] = "cars=1,foo=1", "bar=-1"
			s.Experiments[0].Arms[2].Preference = "baz=1"
		}, want: []string{
			`profiles[0].default_preference: preference "cars=1,foo=1": unknown task "foo" (known: cars, dtd, svhn)`,
			`profiles[0].presets.x: preference "bar=-1": unknown task "bar" (known: cars, dtd, svhn)`,
			`experiments[0].arms[2].preference: preference "baz=1": unknown task "baz" (known: cars, dtd, svhn)`,
		}},
		{name: "arms", edit: func(s *Settings) {
			s.Experiments[0].Arms = []ArmSettings{{}, {Preference: "none", Preset: "Balanced"}, {Preference: " "}, {Preset: "balanced"}}
		}, want: []string{
			`experiments[0].arms[0]: give the arm a preference (or "none") or a preset`,
			"experiments[0].arms[1].preset: set with preference: give one or the other",
			`experiments[0].arms[2].preference: blank: write a preference such as "cars=0.6,dtd=0.4", or "none"`,
			`experiments[0].arms[3].preset: "balanced" is not a preset of components "c", which model "m" uses`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := good()
			tc.edit(&s)
			var got []string
			for _, p := range s.Check(tc.files) {
				got = append(got, p.Error())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestDefaultSettings: the defaults pass the rules they state.
func TestDefaultSettings(t *testing.T) {
	s := DefaultSettings()
	if s.CacheMaxBytes != 128<<20 || s.CacheSize != 0 || s.MaxPreferenceLength != 4096 || len(s.Profiles) != 0 {
		t.Errorf("DefaultSettings() = %+v", s)
	}
	if l := s.Check(true); l != nil {
		t.Errorf("the defaults have problems: %v", l)
	}
}
