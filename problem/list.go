package problem

import (
	"fmt"
	"sort"
	"strings"
)

// List is every problem found in one input. A non-empty List is an error;
// use Err to return one, so that an empty List is a nil error.
type List []*Problem

// Add records a permanent problem with the value at path.
func (l *List) Add(path, format string, args ...any) {
	*l = append(*l, New(path, format, args...))
}

// Err returns l as an error, or nil when it is empty.
func (l List) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}

// Error formats one problem on one line, or several as a count followed
// by one indented line each.
func (l List) Error() string {
	switch len(l) {
	case 0:
		return "no problems"
	case 1:
		return l[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d problems:", len(l))
	for _, p := range l {
		b.WriteString("\n  ")
		b.WriteString(p.Error())
	}
	return b.String()
}

// Unwrap returns the problems, so that errors.As finds a *Problem (the
// first) in an error wrapping l.
func (l List) Unwrap() []error {
	errs := make([]error, len(l))
	for i, p := range l {
		errs[i] = p
	}
	return errs
}

// Transient reports whether l has problems and every one is transient, so
// that trying again later may succeed.
func (l List) Transient() bool {
	for _, p := range l {
		if !p.Transient {
			return false
		}
	}
	return len(l) > 0
}

// SortByLine orders the problems by line, keeping the order of problems on
// the same line; problems without a line (0) come first.
func (l List) SortByLine() {
	sort.SliceStable(l, func(i, j int) bool { return l[i].Line < l[j].Line })
}

// Rename rewrites every problem's path with rename, in place, and returns
// l: how an adapter turns the paths of a shared rule into its own.
func (l List) Rename(rename func(path string) string) List {
	for _, p := range l {
		p.Path = rename(p.Path)
	}
	return l
}

// Lines returns l as an error whose message is one problem per line,
// without a count: the form for a log that shows the message as it is,
// such as Triton's. It unwraps to the problems, and errors.As finds l in
// it.
func (l List) Lines() error {
	if len(l) == 0 {
		return nil
	}
	return lines(l)
}

// lines is a List that formats as one problem per line.
type lines List

func (l lines) Error() string {
	s := make([]string, len(l))
	for i, p := range l {
		s[i] = p.Error()
	}
	return strings.Join(s, "\n")
}

func (l lines) Unwrap() []error { return List(l).Unwrap() }

// As sets a *List target to the problems.
func (l lines) As(target any) bool {
	t, ok := target.(*List)
	if ok {
		*t = List(l)
	}
	return ok
}
