package config

import (
	"strings"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/problem"
)

// Settings returns what the configuration says about its profiles, in the
// terms of control.Settings, whose Check holds the rules every surface
// shares: the components entries, the arms of the experiments with the
// entries of the models that take part, the W_p cache's bounds and
// limits.max_preference_length.
func (c *Config) Settings() control.Settings {
	s := control.Settings{
		CacheMaxBytes:       int64(c.Cache.MaxBytes),
		CacheSize:           c.Cache.Size,
		MaxPreferenceLength: c.Limits.MaxPreferenceLength,
	}
	entry := map[string]int{} // components name → its first entry
	for i, comp := range c.Components {
		if _, dup := entry[comp.Name]; !dup {
			entry[comp.Name] = i
		}
		s.Profiles = append(s.Profiles, control.ProfileSettings{
			Name: comp.Name, Components: comp.Path, Beta: comp.Beta, Normalize: comp.Normalize,
			DefaultPreference: comp.DefaultPreference, Presets: comp.Presets,
		})
	}
	uses := map[string]int{} // model name → the entry of its first definition
	for _, m := range c.Models {
		if _, dup := uses[m.Name]; !dup {
			uses[m.Name] = -1
			if i, ok := entry[m.Components]; ok {
				uses[m.Name] = i
			}
		}
	}
	for _, e := range c.Experiments {
		var es control.ExperimentSettings
		for _, a := range e.Arms {
			es.Arms = append(es.Arms, control.ArmSettings{Preference: a.Preference, Preset: a.Preset})
		}
		for _, name := range e.Models {
			if i, ok := uses[name]; ok {
				es.Uses = append(es.Uses, control.Use{Model: name, Profile: i})
			}
		}
		s.Experiments = append(s.Experiments, es)
	}
	return s
}

// settingsPath renames a path of control.Settings.Check to the file's:
// profiles[i] is components[i] (its components, components[i].path), and
// max_preference_length is under limits.
func settingsPath(path string) string {
	if rest, ok := strings.CutPrefix(path, "profiles"); ok {
		path = "components" + rest
		if i := strings.Index(path, "]"); i >= 0 && path[i+1:] == ".components" {
			path = path[:i+1] + ".path"
		}
		return path
	}
	if path == "max_preference_length" {
		return "limits." + path
	}
	return path
}

// ruled holds the problems of the profile rules, renamed, for Validate to
// report each where the file's schema has its value.
type ruled problem.List

// take moves the problems at root, or under it, to p.
func (r *ruled) take(p *problem.List, root string) {
	kept := (*r)[:0]
	for _, fe := range *r {
		if problem.Under(fe.Path, root) {
			*p = append(*p, fe)
		} else {
			kept = append(kept, fe)
		}
	}
	*r = kept
}
