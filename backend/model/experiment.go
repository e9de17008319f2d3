package model

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/experiment"
	"github.com/mergectl/react-triton/problem"
)

// The parameters of a react model's experiment: the sidecar's experiment
// (its experiments[] entry, docs/sidecar.md) of one model, written as
// model configuration parameters. A model takes part in one experiment at
// most, as in the sidecar. The rules are the sidecar's: experiment.NewSplit
// (arms, weights, traffic), control.NamePattern (names),
// control.Settings.Check (each arm's preference or preset),
// control.CheckKeyHeader and control.CheckKeyParameter (the key),
// control.CheckWindow (start and end).
const (
	// ParamExperimentPrefix starts every key of the experiment.
	ParamExperimentPrefix = "experiment."
	// ParamExperimentName names the experiment: in metrics, and part of
	// every hashed key. Required with any other experiment parameter.
	ParamExperimentName = "experiment.name"
	// ParamExperimentArms lists the arms and their integer weights, in
	// order, as experiment.ParseArms reads them and `calibrate experiment
	// assign --arms` takes them: "merged=50,react=50". Required.
	ParamExperimentArms = "experiment.arms"
	// ParamExperimentArmPrefix starts an arm's setting:
	// experiment.arm.<name>.preference (a preference spec, or "none") or
	// experiment.arm.<name>.preset (one of the model's presets); one of the
	// two for each arm.
	ParamExperimentArmPrefix = "experiment.arm."
	// ParamExperimentTraffic is the share of keys that take part, in
	// (0, 1] (default 1); the others get the default preference.
	ParamExperimentTraffic = "experiment.traffic"
	// ParamExperimentStart and ParamExperimentEnd bound when the
	// experiment runs, [start, end), as RFC 3339 times; either may be left
	// out. Outside, requests get the default, as if there were no
	// experiment.
	ParamExperimentStart = "experiment.start"
	ParamExperimentEnd   = "experiment.end"
	// ParamExperimentKeyHeader names a header that carries the key, which
	// Triton forwards to the model as a request parameter of the same name
	// (--grpc-header-forward-pattern, --http-header-forward-pattern); it is
	// matched regardless of case and read before the parameter.
	ParamExperimentKeyHeader = "experiment.key.header"
	// ParamExperimentKeyParameter names the request parameter that carries
	// the key (a string, or an integer written in decimal), matched
	// exactly. One of the key's two, or both, is required.
	ParamExperimentKeyParameter = "experiment.key.parameter"
)

// The suffixes of an arm's setting.
const (
	armPreference = ".preference"
	armPreset     = ".preset"
)

// Experiment is a react model's A/B experiment: what package control
// resolves (name, arms with their weights and preferences or presets,
// traffic share, window), and where requests carry the key.
type Experiment struct {
	control.ExperimentSpec
	// KeyHeader is the header, forwarded by Triton as a request parameter,
	// that carries the key ("" for none); matched regardless of case and
	// read before KeyParameter.
	KeyHeader string
	// KeyParameter is the request parameter that carries the key ("" for
	// none), matched exactly.
	KeyParameter string
}

// parseExperiment translates the experiment's parameters (raw, by key) into
// c.Experiment, and returns the problems of their syntax and of the rules
// that need no components file; the arms' preferences and presets are
// Settings.Check's.
func (c *Config) parseExperiment(raw map[string]string) problem.List {
	if len(raw) == 0 {
		return nil
	}
	var l problem.List
	at := func(key string) string { return "parameters." + key }
	e := &Experiment{}
	name, ok := raw[ParamExperimentName]
	switch {
	case !ok || name == "":
		l.Add(at(ParamExperimentName), "required with the other experiment parameters: the experiment's name, in metrics and in every hashed key")
	case !control.NamePattern.MatchString(name):
		l.Add(at(ParamExperimentName), "%q: %s", name, control.NameRule)
	}
	e.Name = name

	armsOK := false
	if spec, ok := raw[ParamExperimentArms]; !ok || strings.TrimSpace(spec) == "" {
		l.Add(at(ParamExperimentArms), "required: the arms and their integer weights, in order: name=weight,name=weight (as calibrate experiment assign --arms)")
	} else if arms, err := experiment.ParseArms(spec); err != nil {
		l.Add(at(ParamExperimentArms), "%v", err)
	} else {
		armsOK = true
		if _, err := experiment.NewSplit(name, arms, 1); err != nil {
			l.Add(at(ParamExperimentArms), "%v", err)
		}
		for _, a := range arms {
			if !control.NamePattern.MatchString(a.Name) {
				l.Add(at(ParamExperimentArms), "arm %q: %s", a.Name, control.NameRule)
			}
			e.Arms = append(e.Arms, control.ArmSpec{Name: a.Name, Weight: a.Weight})
		}
	}

	for _, k := range slices.Sorted(maps.Keys(raw)) {
		v := raw[k]
		switch k {
		case ParamExperimentName, ParamExperimentArms:
		case ParamExperimentTraffic:
			t, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				l.Add(at(k), "%q is not a number: the share of keys that take part, in (0, 1]", v)
				continue
			}
			if err := experiment.CheckTraffic(t); err != nil {
				l.Add(at(k), "%v", err)
				continue
			}
			e.Traffic = t
		case ParamExperimentStart, ParamExperimentEnd:
			t, err := time.Parse(time.RFC3339, strings.TrimSpace(v))
			if err != nil {
				l.Add(at(k), "%q is not an RFC 3339 time such as 2026-03-01T09:00:00Z", v)
				continue
			}
			if k == ParamExperimentStart {
				e.Start = t
			} else {
				e.End = t
			}
		case ParamExperimentKeyHeader:
			if msg := control.CheckKeyHeader(v); msg != "" {
				l.Add(at(k), "%s", msg)
			}
			e.KeyHeader = v
		case ParamExperimentKeyParameter:
			if msg := control.CheckKeyParameter(v); msg != "" {
				l.Add(at(k), "%s", msg)
			} else if v == "" {
				l.Add(at(k), "empty: name the request parameter that carries the key")
			}
			e.KeyParameter = v
		default:
			l = append(l, e.setArm(k, v, armsOK)...)
		}
	}
	if err := control.CheckWindow(e.Start, e.End); err != nil {
		l.Add(at(ParamExperimentEnd), "%v", err)
	}
	if _, h := raw[ParamExperimentKeyHeader]; !h {
		if _, p := raw[ParamExperimentKeyParameter]; !p {
			l.Add(at(ParamExperimentKeyParameter), "required (or %s, or both): the request parameter that carries the key, such as a user id", ParamExperimentKeyHeader)
		}
	}
	c.Experiment = e
	return l
}

// setArm sets an arm's preference or preset from its parameter k
// (experiment.arm.<name>.preference or .preset), and returns its
// problems: an arm that experiment.arms does not list (unless the arms did
// not parse), or another key.
func (e *Experiment) setArm(k, v string, armsOK bool) problem.List {
	var l problem.List
	where := "parameters." + k
	rest, ok := strings.CutPrefix(k, ParamExperimentArmPrefix)
	name, field := "", ""
	switch {
	case !ok:
	case strings.HasSuffix(rest, armPreference):
		name, field = strings.TrimSuffix(rest, armPreference), armPreference
	case strings.HasSuffix(rest, armPreset):
		name, field = strings.TrimSuffix(rest, armPreset), armPreset
	}
	if field == "" || name == "" {
		l.Add(where, "unknown experiment parameter (known: %s, %s, %s<arm>%s, %s<arm>%s, %s, %s, %s, %s, %s)",
			ParamExperimentName, ParamExperimentArms, ParamExperimentArmPrefix, armPreference, ParamExperimentArmPrefix, armPreset,
			ParamExperimentTraffic, ParamExperimentStart, ParamExperimentEnd, ParamExperimentKeyHeader, ParamExperimentKeyParameter)
		return l
	}
	found := false
	for i := range e.Arms {
		if a := &e.Arms[i]; a.Name == name {
			found = true
			if field == armPreference {
				a.Preference = v
			} else {
				a.Preset = v
			}
		}
	}
	if !found && armsOK {
		names := make([]string, len(e.Arms))
		for i, a := range e.Arms {
			names[i] = a.Name
		}
		l.Add(where, "%q is not an arm of %s (arms: %s)", name, ParamExperimentArms, strings.Join(names, ", "))
	}
	return l
}

// experimentSettings is the experiment as control.Settings.Check sees it:
// its arms, used by the model's one profile.
func (c *Config) experimentSettings() []control.ExperimentSettings {
	if c.Experiment == nil {
		return nil
	}
	es := control.ExperimentSettings{Uses: []control.Use{{Model: c.Name, Profile: 0}}}
	for _, a := range c.Experiment.Arms {
		es.Arms = append(es.Arms, control.ArmSettings{Preference: a.Preference, Preset: a.Preset})
	}
	return []control.ExperimentSettings{es}
}

// armPath renames a path of control.Settings.Check under
// experiments[0].arms[j] to the arm's parameter,
// parameters.experiment.arm.<name>[.preference|.preset]; ok is false for
// any other path.
func (c *Config) armPath(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, "experiments[0].arms[")
	if !ok || c.Experiment == nil {
		return "", false
	}
	idx, rest, ok := strings.Cut(rest, "]")
	j, err := strconv.Atoi(idx)
	if !ok || err != nil || j < 0 || j >= len(c.Experiment.Arms) {
		return "", false
	}
	return "parameters." + ParamExperimentArmPrefix + c.Experiment.Arms[j].Name + rest, true
}

// experimentError names a *control.ExperimentError of NewProfile by its
// parameter.
func (c *Config) experimentError(ee *control.ExperimentError) *problem.Problem {
	if ee.Arm < 0 || c.Experiment == nil || ee.Arm >= len(c.Experiment.Arms) {
		return problem.New("parameters."+ParamExperimentPrefix[:len(ParamExperimentPrefix)-1], "%v", ee.Err)
	}
	return problem.New(fmt.Sprintf("parameters.%s%s.%s", ParamExperimentArmPrefix, c.Experiment.Arms[ee.Arm].Name, ee.Field), "%v", ee.Err)
}
