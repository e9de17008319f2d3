package react

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateNilFields checks that missing statistics are errors, not
// panics, in Validate and in everything that validates first. A nil
// *mat.Dense boxed in mat.Matrix is not a nil interface, so these cases
// once slipped past Validate's nil check.
func TestValidateNilFields(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(c *Components)
		want string
	}{
		{"nil task", func(c *Components) { c.Tasks[1] = nil }, "task 2: nil statistics"},
		{"nil S", func(c *Components) { c.Tasks[0].S = nil }, `task "a": missing S`},
		{"nil G", func(c *Components) { c.Tasks[0].G = nil }, `task "a": missing G`},
		{"nil W_orth", func(c *Components) { c.Tasks[1].WOrth = nil }, `task "b": missing W_orth`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fileComponents(t, 3, 1, "a", "b")
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
				_, err := NewSolver(c, DefaultOptions(c))
				return err
			})
			check("SaveComponents", func() error {
				return SaveComponents(filepath.Join(t.TempDir(), "c.safetensors"), c)
			})
			check("WriteComponents", func() error {
				return WriteComponents(&bytes.Buffer{}, c)
			})
		})
	}
}
