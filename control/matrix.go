package control

import (
	"fmt"

	"github.com/mergectl/react-triton/react"
)

// Matrix is a solved W_p, ready to apply: row-major float32, D×D, with
// ẑ = W z. It is immutable and shared by every request that uses it.
type Matrix struct {
	// Key is the canonical preference W was solved for.
	Key string
	// D is the feature dimension.
	D int
	// W holds the D×D entries, row-major.
	W []float32
	// Cond is LAPACK's estimate of the condition number of C_p.
	Cond float64
}

// Apply stores the corrected batch in dst: each row of z (B×D, row-major)
// multiplied by W. dst must have z's length and must not overlap it. It
// does not allocate.
func (m *Matrix) Apply(dst, z []float32) error {
	if err := react.Correct(dst, z, m.W, m.D); err != nil {
		return fmt.Errorf("applying W_p for %s: %w", m.Key, err)
	}
	return nil
}
