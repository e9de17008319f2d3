package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestDescribe(t *testing.T) {
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{"no build info", nil, false, "(unknown: no build information)"},
		{"tagged, no VCS", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, true, "v1.2.3"},
		{"test binary", &debug.BuildInfo{}, true, "(devel)"},
		{"clean work tree", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "f3476ac0"}, {Key: "vcs.time", Value: "2026-11-20T10:00:00Z"}, {Key: "vcs.modified", Value: "false"},
		}}, true, "(devel) (revision f3476ac0, 2026-11-20T10:00:00Z)"},
		{"modified work tree", &debug.BuildInfo{Main: debug.Module{Version: "v0.1.0"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"},
		}}, true, "v0.1.0 (revision abc, modified)"},
	} {
		if got := Describe(tc.bi, tc.ok); got != tc.want {
			t.Errorf("%s: Describe = %q, want %q", tc.name, got, tc.want)
		}
	}
}
