package model

import (
	"strings"

	"github.com/mergectl/react-triton/control"
)

// ParamType is the type of a request parameter's value, as the server
// gives it.
type ParamType uint8

// The types of request parameters that matter to the model.
const (
	// ParamString is a string.
	ParamString ParamType = iota
	// ParamInt is an integer.
	ParamInt
	// ParamOther is any other type: a boolean, a double, bytes.
	ParamOther
)

// Reads reports whether the model reads a request parameter of that name:
// react-preference and react-preset in any case, and the experiment's key
// header (any case) or key parameter (exactly). A server reads the values
// of these only, and gives them to ReadParameter.
func (m *Model) Reads(name string) bool {
	if strings.EqualFold(name, control.KeyPreference) || strings.EqualFold(name, control.KeyPreset) {
		return true
	}
	e := m.cfg.Experiment
	return e != nil && ((e.KeyHeader != "" && strings.EqualFold(name, e.KeyHeader)) || (e.KeyParameter != "" && name == e.KeyParameter))
}

// ReadParameter records one request parameter that the model reads in r:
// react-preference and react-preset in r.Keys (names match regardless of
// case, since forwarded HTTP headers keep the client's case; the values
// must be strings), the experiment's key from its key header in r.Header
// and from its key parameter in r.Keys (a string, or an integer, whose
// value is its decimal form). value is the parameter's value for
// ParamString and ParamInt. A value of another type, or a name given
// twice with different values (a parameter and a forwarded header), is a
// *RequestError with CodeInvalidArgument. A parameter the model does not
// read is ignored.
func (m *Model) ReadParameter(r *Request, name string, typ ParamType, value string) error {
	set := func(dst *string, has *bool, key bool) error {
		switch {
		case typ == ParamString, typ == ParamInt && key:
		case key:
			return invalid("parameter %s, the experiment key, must be a string or an integer", name)
		default:
			return invalid("parameter %s: must be a string", name)
		}
		if *has && *dst != value {
			return invalid("parameter %s given twice, as %q and %q (a parameter and a forwarded header?)", name, *dst, value)
		}
		*dst, *has = value, true
		return nil
	}
	var err error
	switch {
	case strings.EqualFold(name, control.KeyPreference):
		err = set(&r.Keys.Preference, &r.Keys.HasPreference, false)
	case strings.EqualFold(name, control.KeyPreset):
		err = set(&r.Keys.Preset, &r.Keys.HasPreset, false)
	}
	e := m.cfg.Experiment
	if err != nil || e == nil {
		return err
	}
	if e.KeyHeader != "" && strings.EqualFold(name, e.KeyHeader) {
		err = set(&r.Header.Key, &r.Header.HasKey, true)
	}
	if err == nil && e.KeyParameter != "" && name == e.KeyParameter {
		err = set(&r.Keys.Key, &r.Keys.HasKey, true)
	}
	return err
}
