package react

import (
	"fmt"
	"math"
	"regexp"

	"gonum.org/v1/gonum/mat"
)

// Normalization says how the per-task sums S_t and G_t are scaled before β
// is added.
type Normalization string

const (
	// NormSum uses the raw sums, as in the paper. β's weight then shrinks as
	// N_t grows, and tasks with more calibration samples weigh more in W_p.
	NormSum Normalization = "sum"
	// NormMean divides S_t and G_t by N_t, so β is relative to per-sample
	// second moments and needs a much smaller value.
	NormMean Normalization = "mean"
)

// ParseNormalization parses "sum" or "mean".
func ParseNormalization(s string) (Normalization, error) {
	switch Normalization(s) {
	case NormSum, NormMean:
		return Normalization(s), nil
	}
	return "", fmt.Errorf("unknown normalization %q (want %q or %q)", s, NormSum, NormMean)
}

// ValidateBeta checks a regulariser β: a finite number ≥ 0. It is the one
// definition of that rule; the solver, the components file, calibrate and
// the sidecar's configuration all call it.
func ValidateBeta(beta float64) error {
	if !(beta >= 0) || math.IsInf(beta, 0) {
		return fmt.Errorf("invalid beta %v: want a finite number ≥ 0", beta)
	}
	return nil
}

// ModelRef names a model served by Triton and the output tensor whose
// values are the features.
type ModelRef struct {
	Name    string // model name in the Triton repository
	Version string // model version; empty means the server's default
	Output  string // output tensor holding the feature
}

// TaskStats holds the calibration statistics of one task.
type TaskStats struct {
	Name   string        // task name, matching TaskNamePattern
	N      int64         // number of calibration samples accumulated
	S      *mat.Dense    // D×D cross-covariance Σ z_ind z_mtlᵀ
	G      *mat.SymDense // D×D Gram matrix Σ z_mtl z_mtlᵀ
	WOrth  *mat.Dense    // D×D orthogonal Procrustes factor of S
	Expert ModelRef      // the expert whose features were the target

	// SumSquares is Σ ‖z_ind‖² over the samples: with S and G, what the
	// reconstruction error of a correction on them needs (heldout.Error).
	// 0 when it was not recorded (files and checkpoints written before it
	// was, or sums restored from them).
	SumSquares float64
	// ReconError is the relative reconstruction error
	// Σ ‖Ŵ_t z_mtl − z_ind‖² / Σ ‖z_ind‖² of the task's own correction Ŵ_t,
	// under the components' default β and normalisation, on the samples
	// themselves, as recorded when the file was written (heldout.Record):
	// the reference of the sidecar's staleness gauge. 0 when not recorded.
	ReconError float64

	// Provenance records how the statistics were computed, such as the
	// subset of samples calibrate fit drew ("subset.fraction",
	// "subset.seed"): stored as metadata "task.<name>.<key>", with any key
	// but the format's own fields (n, expert, expert_version,
	// expert_output). nil when there is none.
	Provenance map[string]string
}

// Components is everything needed to compute W_p for any preference: the
// per-task statistics plus the defaults they were calibrated with.
type Components struct {
	D             int           // feature dimension
	Beta          float64       // default β, overridable at load time
	Normalization Normalization // default normalisation
	Backbone      ModelRef      // the merged backbone and its feature output
	Tasks         []*TaskStats  // in a stable order
}

// TaskNamePattern is the set of valid task names. Names appear in tensor
// names ("<task>.S") and in preference specs, so they exclude '.', ',' and '='.
var TaskNamePattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_-]{0,63}$`)

// ValidateTaskName reports whether name is a valid task name.
func ValidateTaskName(name string) error {
	if !TaskNamePattern.MatchString(name) {
		return fmt.Errorf("invalid task name %q: want 1 to 64 characters of letters, digits, '_' and '-', not starting with '-'", name)
	}
	return nil
}

// TaskNames returns the task names in order.
func (c *Components) TaskNames() []string {
	names := make([]string, len(c.Tasks))
	for i, t := range c.Tasks {
		names[i] = t.Name
	}
	return names
}

// Task returns the statistics of the named task.
func (c *Components) Task(name string) (*TaskStats, bool) {
	for _, t := range c.Tasks {
		if t.Name == name {
			return t, true
		}
	}
	return nil, false
}

// Validate checks that the components are internally consistent: a positive
// D, valid and unique task names, D×D matrices and a positive N per task,
// and finite values (SumSquares and ReconError ≥ 0).
func (c *Components) Validate() error {
	if c.D <= 0 {
		return fmt.Errorf("invalid feature dimension D=%d", c.D)
	}
	if err := ValidateBeta(c.Beta); err != nil {
		return err
	}
	if _, err := ParseNormalization(string(c.Normalization)); err != nil {
		return err
	}
	if len(c.Tasks) == 0 {
		return fmt.Errorf("no tasks")
	}
	seen := make(map[string]bool, len(c.Tasks))
	for i, t := range c.Tasks {
		if t == nil {
			return fmt.Errorf("task %d: nil statistics", i+1)
		}
		if err := ValidateTaskName(t.Name); err != nil {
			return err
		}
		if seen[t.Name] {
			return fmt.Errorf("duplicate task %q", t.Name)
		}
		seen[t.Name] = true
		if t.N <= 0 {
			return fmt.Errorf("task %q: no calibration samples (N=%d)", t.Name, t.N)
		}
		if !(t.SumSquares >= 0) || math.IsInf(t.SumSquares, 0) || !(t.ReconError >= 0) || math.IsInf(t.ReconError, 0) {
			return fmt.Errorf("task %q: sum of squares %v, reconstruction error %v: want finite numbers ≥ 0", t.Name, t.SumSquares, t.ReconError)
		}
		// A nil *mat.Dense or *mat.SymDense boxed in mat.Matrix is not a nil
		// interface, so each field is checked before it is boxed.
		switch {
		case t.S == nil:
			return fmt.Errorf("task %q: missing S", t.Name)
		case t.G == nil:
			return fmt.Errorf("task %q: missing G", t.Name)
		case t.WOrth == nil:
			return fmt.Errorf("task %q: missing W_orth", t.Name)
		}
		for _, m := range []struct {
			name string
			m    mat.Matrix
		}{{"S", t.S}, {"G", t.G}, {"W_orth", t.WOrth}} {
			r, cc := m.m.Dims()
			if r != c.D || cc != c.D {
				return fmt.Errorf("task %q: %s is %d×%d, want %d×%d", t.Name, m.name, r, cc, c.D, c.D)
			}
			if !allFinite(m.m) {
				return fmt.Errorf("task %q: %s has a NaN or infinite entry", t.Name, m.name)
			}
		}
	}
	return nil
}

func allFinite(m mat.Matrix) bool {
	// The raw storage of the types components hold, read row by row
	// (At per element is several times slower on large files).
	var rows [][]float64
	switch x := m.(type) {
	case mat.RawMatrixer:
		raw := x.RawMatrix()
		for i := 0; i < raw.Rows; i++ {
			rows = append(rows, raw.Data[i*raw.Stride:i*raw.Stride+raw.Cols])
		}
	case mat.RawSymmetricer:
		raw := x.RawSymmetric()
		for i := 0; i < raw.N; i++ {
			rows = append(rows, raw.Data[i*raw.Stride+i:i*raw.Stride+raw.N]) // the stored triangle
		}
	default:
		r, c := m.Dims()
		for i := 0; i < r; i++ {
			for j := 0; j < c; j++ {
				if v := m.At(i, j); math.IsNaN(v) || math.IsInf(v, 0) {
					return false
				}
			}
		}
		return true
	}
	for _, row := range rows {
		for _, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return false
			}
		}
	}
	return true
}
