package config

import (
	"fmt"
	"sort"
	"strings"
)

// FieldError is one problem with one configuration value.
type FieldError struct {
	// Path names the value: "triton.grpc", "components[1].beta",
	// "models[2].heads[0].model", "components[0].presets.balanced". It is
	// "" for the file as a whole.
	Path string
	// Msg says what is wrong, without the path.
	Msg string
	// Line is the line of the file the value (or, for a missing value, its
	// closest enclosing section) is on; 0 when unknown or when the value
	// did not come from the file.
	Line int
	// Source names the environment variable ("$REACT_CACHE_SIZE") or flag
	// ("--log-level") the value came from; "" for the file or a default.
	Source string
}

// Error formats e as "path: message", followed by where the value came
// from when known: "(line 12)", "(from $REACT_CACHE_SIZE)".
func (e *FieldError) Error() string {
	var b strings.Builder
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	switch {
	case e.Source != "":
		fmt.Fprintf(&b, " (from %s)", e.Source)
	case e.Line > 0:
		fmt.Fprintf(&b, " (line %d)", e.Line)
	}
	return b.String()
}

// Error lists every problem found in a configuration. Load and Validate
// return it (Load wrapped with the file's name), so that callers can list
// the problems one by one:
//
//	var cerr *config.Error
//	if errors.As(err, &cerr) {
//		for _, fe := range cerr.Errors { ... }
//	}
type Error struct {
	// Errors holds at least one problem, in the order of the file when
	// Load returned it, and in the order of the schema otherwise.
	Errors []*FieldError
}

// Error formats one problem on one line, or several as a count followed
// by one indented "path: message" line each.
func (e *Error) Error() string {
	switch len(e.Errors) {
	case 0:
		return "no problems"
	case 1:
		return e.Errors[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d problems:", len(e.Errors))
	for _, fe := range e.Errors {
		b.WriteString("\n  ")
		b.WriteString(fe.Error())
	}
	return b.String()
}

// Unwrap returns the problems, so that errors.As can find a *FieldError
// (the first) in an error wrapping e.
func (e *Error) Unwrap() []error {
	errs := make([]error, len(e.Errors))
	for i, fe := range e.Errors {
		errs[i] = fe
	}
	return errs
}

// problems collects FieldErrors.
type problems struct {
	errs []*FieldError
}

// add records a problem with the value at path.
func (p *problems) add(path, format string, args ...any) {
	p.errs = append(p.errs, &FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
}

// err returns the problems as an *Error, or nil when there are none.
func (p *problems) err() error {
	if len(p.errs) == 0 {
		return nil
	}
	return &Error{Errors: p.errs}
}

// sortByLine orders problems by line in the file, keeping the order of
// problems on the same line; problems outside the file (line 0) come first.
func sortByLine(errs []*FieldError) {
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Line < errs[j].Line })
}
