package react_test

import (
	"testing"

	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/internal/reacttest"
)

// TestValidateNilFields checks that missing statistics are errors, not
// panics, in Validate and in the solver, which validates first (the
// components file's writers: componentsfile's TestValidateNilFields). A
// nil *mat.Dense boxed in mat.Matrix is not a nil interface, so these
// cases once slipped past Validate's nil check.
func TestValidateNilFields(t *testing.T) {
	for _, tc := range reacttest.NilFields {
		t.Run(tc.Name, func(t *testing.T) {
			c := reacttest.Components(t, 3, 1, "a", "b")
			tc.Edit(c)
			reacttest.Refuses(t, "Validate", c.Validate, tc.Want)
			reacttest.Refuses(t, "NewSolver", func() error {
				_, err := react.NewSolver(c, react.DefaultOptions(c))
				return err
			}, tc.Want)
		})
	}
}
