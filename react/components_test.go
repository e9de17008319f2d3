package react_test

import (
	"strings"
	"testing"

	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/internal/reacttest"
)

// TestValidateNilFields checks that missing statistics are errors, not
// panics, in Validate and in the solver, which validates first (the components
// file's writers: componentsfile's TestValidateNilFields). A nil
// *mat.Dense boxed in mat.Matrix is not a nil interface, so these cases
// once slipped past Validate's nil check.
func TestValidateNilFields(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(c *react.Components)
		want string
	}{
		{"nil task", func(c *react.Components) { c.Tasks[1] = nil }, "task 2: nil statistics"},
		{"nil S", func(c *react.Components) { c.Tasks[0].S = nil }, `task "a": missing S`},
		{"nil G", func(c *react.Components) { c.Tasks[0].G = nil }, `task "a": missing G`},
		{"nil W_orth", func(c *react.Components) { c.Tasks[1].WOrth = nil }, `task "b": missing W_orth`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := reacttest.Components(t, 3, 1, "a", "b")
			tc.edit(c)
			check := func(what string, f func() error) {
				t.Helper()
				var err error
				func() {
					defer func() {
						if r := recover(); r != nil {
							t.Errorf("%s panicked: %v", what, r)
						}
					}()
					err = f()
				}()
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s = %v, want an error containing %q", what, err, tc.want)
				}
			}
			check("Validate", c.Validate)
			check("NewSolver", func() error {
				_, err := react.NewSolver(c, react.DefaultOptions(c))
				return err
			})
		})
	}
}
