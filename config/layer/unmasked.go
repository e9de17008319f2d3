package layer

import (
	"slices"
	"strings"

	"github.com/mergectl/react-triton/problem"
)

// Unmasked drops the validation problems that a key which did not decode
// explains, and keeps every other, so that one pass reports them all: a
// value that did not decode (a list given as a number, an entry given as a
// string) explains every problem under it; an unknown key (a typo'd
// "outptu") explains what its parent lacks ("output: required"), and a
// top-level key that did not decode what any part lacks (the sections
// depend on each other: no components entry, no model can name one). An
// unknown task in a preset beside a typo still shows.
func Unmasked(decodeErrs, errs problem.List) problem.List {
	if len(decodeErrs) == 0 {
		return errs
	}
	var values []string          // paths whose values did not decode
	parents := map[string]bool{} // holders of an unknown key
	topLevel := false            // a top-level key did not decode
	for _, fe := range decodeErrs {
		topLevel = topLevel || topSection(fe.Path) == fe.Path
		if strings.HasPrefix(fe.Msg, "unknown key") {
			parents[parentPath(fe.Path)] = true
		} else {
			values = append(values, fe.Path)
		}
	}
	var out problem.List
	for _, fe := range errs {
		if slices.ContainsFunc(values, func(v string) bool { return under(fe.Path, v) }) {
			continue
		}
		lacks := strings.Contains(fe.Msg, "required")
		if lacks && (topLevel || parents[parentPath(fe.Path)]) {
			continue
		}
		out = append(out, fe)
	}
	return out
}

// under reports whether path is root or a key or element below it.
func under(path, root string) bool {
	rest, ok := strings.CutPrefix(path, root)
	return ok && (rest == "" || rest[0] == '.' || rest[0] == '[')
}

// parentPath returns the path of what holds the key at path:
// "models[0].backbone" for "models[0].backbone.output", "models[0]" for
// "models[0].heads", "" for a top-level key.
func parentPath(path string) string {
	if i := strings.LastIndexAny(path, ".["); i >= 0 {
		return path[:i]
	}
	return ""
}

// topSection returns the top-level key of a path: "models" for
// "models[0].backbone.output", "limits" for "limits.max_batch_size".
func topSection(path string) string {
	if i := strings.IndexAny(path, ".["); i >= 0 {
		return path[:i]
	}
	return path
}
