package react

import (
	"fmt"
	"math"
)

// State returns the accumulator's raw state, for a checkpoint: the number
// of samples, S (D×D row-major) and the D×D row-major storage of G whose
// upper triangle holds G. The slices alias the accumulator; copy them
// before adding more samples if they must not change.
func (a *Accumulator) State() (n int64, s, g []float64) { return a.n, a.s, a.g }

// RestoreAccumulator returns an accumulator of dimension d holding a state
// State returned, copied: adding the same batches to it then gives the
// same bits as adding them to the accumulator the state came from. Its
// Σ ‖z_ind‖² is unknown (SumSquares); RestoreAccumulatorSquares restores
// a state that recorded it.
func RestoreAccumulator(d int, n int64, s, g []float64) (*Accumulator, error) {
	a, err := restore(d, n, s, g)
	if err != nil {
		return nil, err
	}
	a.yyKnown = false
	return a, nil
}

// RestoreAccumulatorSquares is RestoreAccumulator for a state that also
// recorded yy = Σ ‖z_ind‖² (SumSquares), a finite number ≥ 0.
func RestoreAccumulatorSquares(d int, n int64, s, g []float64, yy float64) (*Accumulator, error) {
	if !(yy >= 0) || math.IsInf(yy, 0) {
		return nil, fmt.Errorf("accumulate: restore: sum of squares %v: want a finite number ≥ 0", yy)
	}
	a, err := restore(d, n, s, g)
	if err != nil {
		return nil, err
	}
	a.yy = yy
	return a, nil
}

func restore(d int, n int64, s, g []float64) (*Accumulator, error) {
	if d <= 0 {
		return nil, fmt.Errorf("accumulate: restore: invalid feature dimension %d", d)
	}
	if n < 0 {
		return nil, fmt.Errorf("accumulate: restore: negative sample count %d", n)
	}
	if len(s) != d*d || len(g) != d*d {
		return nil, fmt.Errorf("accumulate: restore: S has %d values and G %d, want %d each", len(s), len(g), d*d)
	}
	a := NewAccumulator(d)
	copy(a.s, s)
	copy(a.g, g)
	a.n = n
	return a, nil
}
