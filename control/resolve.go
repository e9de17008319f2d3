package control

import (
	"fmt"
	"sort"
	"strings"

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
}

// Request is what a request says about its preference: in its headers (or
// gRPC metadata) and in its inference parameters.
type Request struct {
	Header    Values
	Parameter Values
}

// Source says where the applied preference came from.
type Source uint8

// The sources of a preference, highest precedence first.
const (
	SourceHeader    Source = iota // the react-preference header or metadata
	SourceParameter               // the react-preference request parameter
	SourcePreset                  // a preset named by react-preset
	SourceDefault                 // the profile's default preference
)

var sourceNames = [...]string{"header", "parameter", "preset", "default"}

// String returns "header", "parameter", "preset" or "default".
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
	// Preset is the preset's name when Source is SourcePreset.
	Preset string
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
// and lists the valid task and preset names.
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
	return fmt.Sprintf("%s %s: %v (valid tasks: %s; presets: %s)", e.Key, e.Where, e.Err, strings.Join(e.Tasks, ", "), presets)
}

// Unwrap returns the underlying problem.
func (e *InputError) Unwrap() error { return e.Err }

// Resolve applies the precedence of a request's keys: the react-preference
// header, then the react-preference parameter, then a preset named by
// react-preset (header before parameter), then the default. Only the
// winning value is read. A preference spec is parsed against the profile's
// tasks and rounded (react.Preference.Rounded); the word None asks for no
// correction. A bad spec, an unknown preset, or a value longer than the
// profile's limit is an *InputError.
func (p *Profile) Resolve(r Request) (Choice, error) {
	switch {
	case r.Header.HasPreference:
		return p.parse(r.Header.Preference, SourceHeader)
	case r.Parameter.HasPreference:
		return p.parse(r.Parameter.Preference, SourceParameter)
	case r.Header.HasPreset:
		return p.preset(r.Header.Preset, "header")
	case r.Parameter.HasPreset:
		return p.preset(r.Parameter.Preset, "parameter")
	}
	return p.def, nil
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
	c.Source = src
	return c, nil
}

// parseSpec parses a spec or None into a Choice without a source.
func (p *Profile) parseSpec(spec string) (Choice, error) {
	if strings.TrimSpace(spec) == None {
		return Choice{}, nil
	}
	pref, err := react.ParsePreference(spec, p.tasks)
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
