package problem

import (
	"fmt"
	"strings"
)

// Problem is one problem with one value.
type Problem struct {
	// Path names the value: "triton.grpc", "components[1].beta",
	// "parameters.preset.gentle". It is "" for the input as a whole.
	Path string
	// Msg says what is wrong, without the path.
	Msg string
	// Line is the line of the file the value (or, for a missing value, its
	// closest enclosing section) is on; 0 when unknown or when the value
	// did not come from a file.
	Line int
	// Source names the flag ("--log-level") or environment variable
	// ("$REACT_CACHE_SIZE") the value came from; "" for a file or a
	// default.
	Source string
	// Transient reports that the problem may go away by itself, so that
	// trying again later may succeed: Triton unreachable, a model not
	// loaded or not ready yet.
	Transient bool
}

// New returns a permanent problem with the value at path.
func New(path, format string, args ...any) *Problem {
	return &Problem{Path: path, Msg: fmt.Sprintf(format, args...)}
}

// Error formats p as "path: message", followed by where the value came
// from when known: "(from $REACT_CACHE_SIZE)", "(line 12)".
func (p *Problem) Error() string {
	var b strings.Builder
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	switch {
	case p.Source != "":
		fmt.Fprintf(&b, " (from %s)", p.Source)
	case p.Line > 0:
		fmt.Fprintf(&b, " (line %d)", p.Line)
	}
	return b.String()
}
