package control

import (
	"maps"
	"slices"
	"strings"

	"github.com/mergectl/react-triton/internal/filecheck"
	"github.com/mergectl/react-triton/problem"
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/componentsfile"
)

// Check applies the rules of a profile and returns every problem at once,
// at paths of its own that each surface renames: "cache.max_bytes",
// "cache.size", "max_preference_length", "profiles[i].components",
// "profiles[i].beta", "profiles[i].normalize",
// "profiles[i].default_preference", "profiles[i].presets.<name>" (a name
// that is not a plain word quoted, as problem.Key writes it) and
// "experiments[i].arms[j].preference" or ".preset".
//
// With files, each profile's components file must be a readable regular
// file, and the default preference, the presets and the arms' preferences
// are checked against the tasks in its header; without, only what needs no
// file (a surface that cannot resolve the path yet checks the rest when
// it loads the file).
func (s *Settings) Check(files bool) problem.List {
	var l problem.List
	if s.CacheMaxBytes < 1 {
		l.Add("cache.max_bytes", "must be positive, got %d", s.CacheMaxBytes)
	}
	if s.CacheSize < 0 {
		l.Add("cache.size", "must be 0 (bounded by max_bytes only) or positive, got %d", s.CacheSize)
	}
	if s.MaxPreferenceLength < 1 {
		l.Add("max_preference_length", "must be at least 1, got %d", s.MaxPreferenceLength)
	}
	tasks := make([][]string, len(s.Profiles))
	for i := range s.Profiles {
		tasks[i] = s.Profiles[i].check(&l, problem.Index("profiles", i), files)
	}
	for i, e := range s.Experiments {
		for j, a := range e.Arms {
			s.checkArm(&l, problem.Index(problem.Index("experiments", i)+".arms", j), a, e.Uses, tasks)
		}
	}
	return l
}

// check checks one profile, and returns the tasks of its components file,
// nil when they are unknown.
func (p *ProfileSettings) check(l *problem.List, path string, files bool) []string {
	var tasks []string
	switch {
	case p.Components == "":
		l.Add(path+".components", "required: the components file (safetensors) written by calibrate fit")
	case !files:
	default:
		if msg := filecheck.Regular(p.Components); msg != "" {
			l.Add(path+".components", "%s", msg)
		} else if info, err := componentsfile.ReadInfo(p.Components); err == nil {
			// A file that does not read is the problem of whoever loads
			// it, with the file's whole check.
			tasks = info.TaskNames()
		}
	}
	if p.Beta != nil {
		if err := react.ValidateBeta(*p.Beta); err != nil {
			l.Add(path+".beta", "%v", err)
		}
	}
	if p.Normalize != "" {
		if _, err := react.ParseNormalization(p.Normalize); err != nil {
			l.Add(path+".normalize", "%v", err)
		}
	}
	if p.DefaultPreference != "" && strings.TrimSpace(p.DefaultPreference) == "" {
		l.Add(path+".default_preference", "blank: write a preference such as \"cars=0.6,dtd=0.4\", or leave the key out for no correction")
	}
	checkSpec(l, path+".default_preference", p.DefaultPreference, tasks)
	for _, name := range slices.Sorted(maps.Keys(p.Presets)) {
		pp := problem.Key(path+".presets", name)
		if !NamePattern.MatchString(name) {
			l.Add(pp, "preset name %q: %s", name, NameRule)
		}
		if strings.TrimSpace(p.Presets[name]) == "" {
			l.Add(pp, "empty preference: write one such as \"cars=0.6,dtd=0.4\"")
		}
		checkSpec(l, pp, p.Presets[name], tasks)
	}
	return tasks
}

// checkArm checks an arm against the profiles of the models that take part
// in its experiment.
func (s *Settings) checkArm(l *problem.List, path string, a ArmSettings, uses []Use, tasks [][]string) {
	switch {
	case a.Preference == "" && a.Preset == "":
		l.Add(path, "give the arm a preference (or \"none\") or a preset")
	case a.Preference != "" && a.Preset != "":
		l.Add(path+".preset", "set with preference: give one or the other")
	case a.Preference != "" && strings.TrimSpace(a.Preference) == "":
		l.Add(path+".preference", "blank: write a preference such as \"cars=0.6,dtd=0.4\", or \"none\"")
	case a.Preference != "":
		checked := map[int]bool{}
		for _, u := range uses {
			if u.Profile >= 0 && !checked[u.Profile] {
				checked[u.Profile] = true
				checkSpec(l, path+".preference", a.Preference, tasks[u.Profile])
			}
		}
	default:
		for _, u := range uses {
			if u.Profile < 0 {
				continue // the surface reports the model or entry that does not exist
			}
			p := &s.Profiles[u.Profile]
			if _, ok := p.Presets[a.Preset]; !ok {
				l.Add(path+".preset", "%q is not a preset of components %q, which model %q uses", a.Preset, p.Name, u.Model)
				return
			}
		}
	}
}

// checkSpec adds a problem at path if spec is not a preference over tasks
// (or none); tasks nil, for a components file that was not read, checks
// nothing.
func checkSpec(l *problem.List, path, spec string, tasks []string) {
	if tasks == nil || strings.TrimSpace(spec) == "" {
		return
	}
	if _, err := ParseSpec(spec, tasks); err != nil {
		l.Add(path, "%v", err)
	}
}
