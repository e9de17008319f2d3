package control

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/mergectl/react-triton/react"
)

// Values are the preference keys found in one place of a request.
type Values struct {
	// Preference is the react-preference value, if HasPreference.
	Preference    string
	HasPreference bool
	// Preset is the react-preset value, if HasPreset.
	Preset    string
	HasPreset bool
	// Key is the experiment key (the header or parameter the experiment
	// of the request's model names), if HasKey.
	Key    string
	HasKey bool
}

// ValuesFrom reads ReACT's react-preference and react-preset keys (the
// first value of each) with get, which returns every value of a key in
// order: http.Header.Values for HTTP headers, metadata.MD.Get for gRPC
// metadata. Key is left unset: the header that carries it is the
// experiment's.
func ValuesFrom(get func(key string) []string) Values {
	var v Values
	if p := get(KeyPreference); len(p) > 0 {
		v.Preference, v.HasPreference = p[0], true
	}
	if p := get(KeyPreset); len(p) > 0 {
		v.Preset, v.HasPreset = p[0], true
	}
	return v
}

// Request is what a request says about its preference: in its headers (or
// gRPC metadata) and in its inference parameters; and the experiment its
// model takes part in.
type Request struct {
	Header    Values
	Parameter Values
	// Experiment is the experiment of the request's model, one of the
	// profile's (Profile.Experiment); nil for none.
	Experiment *Experiment
	// Now is when the request came, for the experiment's start and end;
	// the zero time means time.Now().
	Now time.Time
}

// Source says where the applied preference came from.
type Source uint8

// The sources of a preference, highest precedence first.
const (
	SourceHeader    Source = iota // the react-preference header or metadata
	SourceParameter               // the react-preference request parameter
	SourcePreset                  // a preset named by react-preset
	SourceArm                     // the arm of the model's experiment
	SourceDefault                 // the profile's default preference
)

var sourceNames = [...]string{"header", "parameter", "preset", "arm", "default"}

// String returns "header", "parameter", "preset", "arm" or "default".
func (s Source) String() string {
	if int(s) < len(sourceNames) {
		return sourceNames[s]
	}
	return fmt.Sprintf("Source(%d)", uint8(s))
}

// Choice is a resolved preference.
type Choice struct {
	// Preference is the rounded preference; the zero value means no
	// correction.
	Preference react.Preference
	// Key is its canonical form, "" for no correction.
	Key string
	// Source is where it came from.
	Source Source
	// Preset is the preset's name when Source is SourcePreset, or when
	// Source is SourceArm and the arm is a preset.
	Preset string
	// Experiment names the experiment that was running for the request's
	// model, "" for none; Arm is the arm applied (Source SourceArm), ""
	// when no arm was; Assignment says how the experiment treated the
	// request.
	Experiment string
	Arm        string
	Assignment Assignment
	// Gridded reports that the request's preference was moved to the
	// profile's grid (ProfileSpec.Grid).
	Gridded bool
}

// Assignment says how an experiment treated a request.
type Assignment uint8

// How a running experiment treats a request.
const (
	AssignNone     Assignment = iota // no experiment running for the model
	AssignKey                        // the arm of the request's key
	AssignRandom                     // a random arm: the request had no key
	AssignOverride                   // the request named its own preference or preset
	AssignExcluded                   // the key is outside the traffic share: the default
)

var assignmentNames = [...]string{"none", "key", "random", "override", "excluded"}

// String returns "none", "key", "random", "override" or "excluded".
func (a Assignment) String() string {
	if int(a) < len(assignmentNames) {
		return assignmentNames[a]
	}
	return fmt.Sprintf("Assignment(%d)", uint8(a))
}

// Corrects reports whether the choice applies a correction.
func (c Choice) Corrects() bool { return c.Key != "" }

// Canonical is what a response echoes: the canonical preference, or None.
func (c Choice) Canonical() string {
	if c.Key == "" {
		return None
	}
	return c.Key
}

// InputError reports a preference or preset a request got wrong. Servers
// answer it with INVALID_ARGUMENT (HTTP 400); its message names the problem
// and lists the valid task and preset names (the tasks once: an unknown
// task's error lists them itself).
type InputError struct {
	// Key is the request key at fault, KeyPreference or KeyPreset.
	Key string
	// Where says where it was found: "header" or "parameter".
	Where string
	// Err is the problem.
	Err error
	// Tasks and Presets are the valid names.
	Tasks, Presets []string
}

// Error implements error.
func (e *InputError) Error() string {
	presets := "none"
	if len(e.Presets) > 0 {
		presets = strings.Join(e.Presets, ", ")
	}
	if errors.Is(e.Err, react.ErrUnknownTask) { // it lists the tasks already
		return fmt.Sprintf("%s %s: %v (presets: %s)", e.Key, e.Where, e.Err, presets)
	}
	return fmt.Sprintf("%s %s: %v (valid tasks: %s; presets: %s)", e.Key, e.Where, e.Err, strings.Join(e.Tasks, ", "), presets)
}

// Unwrap returns the underlying problem.
func (e *InputError) Unwrap() error { return e.Err }

// Resolve applies the precedence of a request's keys: the react-preference
// header, then the react-preference parameter, then a preset named by
// react-preset (header before parameter), then the arm of the model's
// experiment while it runs, then the default. Only the winning value is
// read. A preference spec is parsed against the profile's tasks and rounded
// (react.Preference.Rounded), then, unless it is pinned as it is, to the
// profile's grid (ProfileSpec.Grid); the word None asks for no correction.
// A bad spec, an unknown preset, a value longer than the profile's limit,
// or a preference that is not pinned in a profile that serves presets
// only, is an *InputError.
//
// The experiment's arm is that of the request's key, read from the header
// (gRPC metadata) before the parameter; a request without a key gets a
// random arm (Assignment AssignRandom), and a key outside the experiment's
// traffic share the default (AssignExcluded). A request that names its
// own preference or preset while the experiment runs is an override
// (AssignOverride): it gets what it named, and no arm.
func (p *Profile) Resolve(r Request) (Choice, error) {
	var (
		c   Choice
		err error
	)
	switch {
	case r.Header.HasPreference:
		c, err = p.parse(r.Header.Preference, SourceHeader)
	case r.Parameter.HasPreference:
		c, err = p.parse(r.Parameter.Preference, SourceParameter)
	case r.Header.HasPreset:
		c, err = p.preset(r.Header.Preset, "header")
	case r.Parameter.HasPreset:
		c, err = p.preset(r.Parameter.Preset, "parameter")
	default:
		if e := p.running(r); e != nil {
			key, hasKey := r.Header.Key, r.Header.HasKey
			if !hasKey {
				key, hasKey = r.Parameter.Key, r.Parameter.HasKey
			}
			return e.assign(key, hasKey, p.def), nil
		}
		return p.def, nil
	}
	if e := p.running(r); e != nil && err == nil {
		c.Experiment, c.Assignment = e.Name(), AssignOverride
	}
	return c, err
}

// running returns the request's experiment if it runs now, else nil.
func (p *Profile) running(r Request) *Experiment {
	if r.Experiment == nil {
		return nil
	}
	now := r.Now
	if now.IsZero() {
		now = time.Now()
	}
	if !r.Experiment.Running(now) {
		return nil
	}
	return r.Experiment
}

// parse resolves a preference spec from a request.
func (p *Profile) parse(spec string, src Source) (Choice, error) {
	if err := p.checkLength(spec); err != nil {
		return Choice{}, p.inputError(KeyPreference, src.String(), err)
	}
	c, err := p.parseSpec(spec)
	if err != nil {
		return Choice{}, p.inputError(KeyPreference, src.String(), err)
	}
	if c.Corrects() && p.pinned[c.Key] == nil {
		if p.grid > 0 {
			pref := c.Preference.RoundedTo(p.grid)
			c = Choice{Preference: pref, Key: pref.String(), Gridded: pref.String() != c.Key}
		}
		if p.presetsOnly && p.pinned[c.Key] == nil {
			return Choice{}, p.inputError(KeyPreference, src.String(), ErrPresetsOnly)
		}
	}
	c.Source = src
	return c, nil
}

// ErrPresetsOnly refuses a preference that would need a solve, in a
// profile that serves presets only (ProfileSpec.PresetsOnly).
var ErrPresetsOnly = errors.New("only presets, experiment arms, the default and none are served here, not preferences of their own: name a preset with react-preset")

// parseSpec parses a spec or None into a Choice without a source, once
// per distinct spec (specMemo).
func (p *Profile) parseSpec(spec string) (Choice, error) {
	if c, ok := p.specs.get(spec); ok {
		return c, nil
	}
	c, err := ParseSpec(spec, p.tasks)
	if err == nil {
		p.specs.put(spec, c)
	}
	return c, err
}

// ParseSpec parses a preference spec as a configuration or a request
// gives it, against a components file's tasks: None for no correction, or
// a preference (react.ParsePreference), rounded as every W_p is solved.
func ParseSpec(spec string, tasks []string) (Choice, error) {
	if strings.TrimSpace(spec) == None {
		return Choice{}, nil
	}
	pref, err := react.ParsePreference(spec, tasks)
	if err != nil {
		return Choice{}, err
	}
	pref = pref.Rounded()
	return Choice{Preference: pref, Key: pref.String()}, nil
}

// preset resolves a preset name from a request.
func (p *Profile) preset(name, where string) (Choice, error) {
	if err := p.checkLength(name); err != nil {
		return Choice{}, p.inputError(KeyPreset, where, err)
	}
	c, ok := p.presets[strings.TrimSpace(name)]
	if !ok {
		return Choice{}, p.inputError(KeyPreset, where, fmt.Errorf("unknown preset %q", name))
	}
	return c, nil
}

func (p *Profile) checkLength(v string) error {
	if p.maxLen > 0 && len(v) > p.maxLen {
		return fmt.Errorf("value of %d bytes is longer than the limit of %d", len(v), p.maxLen)
	}
	return nil
}

// namesOrNone lists names, or says "none".
func namesOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func (p *Profile) inputError(key, where string, err error) *InputError {
	return &InputError{Key: key, Where: where, Err: err, Tasks: p.tasks, Presets: p.presetNames}
}

// sortedNames returns the keys of m in order.
func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}
