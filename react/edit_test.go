package react_test

import (
	"strings"
	"testing"

	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/internal/reacttest"
)

func TestEditRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		do   func() error
		want string
	}{
		{"add duplicate", func() error {
			return react.AddTasks(reacttest.Components(t, 3, 1, "a", "b"), reacttest.Components(t, 3, 2, "b"))
		}, `task "b" is already present`},
		{"add other D", func() error {
			return react.AddTasks(reacttest.Components(t, 3, 1, "a"), reacttest.Components(t, 4, 2, "b"))
		}, "feature dimension differs: 3 in the destination, 4 in the source"},
		{"add other backbone", func() error {
			src := reacttest.Components(t, 3, 2, "b")
			src.Backbone.Version = "4"
			return react.AddTasks(reacttest.Components(t, 3, 1, "a"), src)
		}, "backbone differs"},
		{"remove unknown", func() error {
			return react.RemoveTasks(reacttest.Components(t, 3, 1, "a", "b"), "z")
		}, `unknown task "z" (known: a, b)`},
		{"remove all", func() error {
			return react.RemoveTasks(reacttest.Components(t, 3, 1, "a", "b"), "a", "b")
		}, "every task"},
		{"remove twice", func() error {
			return react.RemoveTasks(reacttest.Components(t, 3, 1, "a", "b"), "a", "a")
		}, `task "a" named twice`},
		{"remove none", func() error {
			return react.RemoveTasks(reacttest.Components(t, 3, 1, "a"))
		}, "no task named"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.do(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	// A refused add leaves the destination unchanged.
	dst := reacttest.Components(t, 3, 1, "a", "b")
	if err := react.AddTasks(dst, reacttest.Components(t, 3, 2, "c", "a")); err == nil || len(dst.Tasks) != 2 {
		t.Errorf("refused AddTasks: err %v, %d tasks", err, len(dst.Tasks))
	}
}
