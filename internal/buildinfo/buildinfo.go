// Package buildinfo describes how a command was built, for --version.
package buildinfo

import (
	"runtime/debug"
	"strings"
)

// Version describes the running binary's build; see Describe.
func Version() string { return Describe(debug.ReadBuildInfo()) }

// Describe describes the build from its build information: the main
// module's version (a tag, a pseudo-version, or "(devel)" for a build from
// a work tree), then the VCS revision, its time, and "modified" when the
// work tree had uncommitted changes. For example
//
//	v0.3.0 (revision 1a2b3c4d5e6f, 2026-11-20T10:00:00Z)
//	(devel) (revision 1a2b3c4d5e6f, 2026-11-20T10:00:00Z, modified)
func Describe(bi *debug.BuildInfo, ok bool) string {
	if !ok || bi == nil {
		return "(unknown: no build information)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, at string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		return v
	}
	parts := []string{"revision " + rev}
	if at != "" {
		parts = append(parts, at)
	}
	if modified {
		parts = append(parts, "modified")
	}
	return v + " (" + strings.Join(parts, ", ") + ")"
}
