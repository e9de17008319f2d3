package sequential

import (
	"errors"
	"fmt"
	"math"
)

// Sample is the outcomes of one arm: their number, sum and sum of squares.
// For labels (1 matched, 0 missed) SumSq equals Sum.
type Sample struct {
	N, Sum, SumSq float64
}

// Mean returns the mean outcome, NaN with no outcomes.
func (s Sample) Mean() float64 {
	if s.N == 0 {
		return math.NaN()
	}
	return s.Sum / s.N
}

// Variance returns the sample variance of the outcomes (with N − 1), 0
// with fewer than two.
func (s Sample) Variance() float64 {
	if s.N < 2 {
		return 0
	}
	v := (s.SumSq - s.Sum*s.Sum/s.N) / (s.N - 1)
	return max(v, 0) // rounding
}

// Check reports a sample that no outcomes in [0, 1] can give.
func (s Sample) Check() error {
	switch {
	case !(s.N >= 0) || math.IsInf(s.N, 0):
		return fmt.Errorf("count %v: want a number ≥ 0", s.N)
	case !(s.Sum >= 0 && s.Sum <= s.N):
		return fmt.Errorf("sum %v of %v outcomes: outcomes lie in [0, 1]", s.Sum, s.N)
	case !(s.SumSq >= 0 && s.SumSq <= s.Sum*(1+1e-12)+1e-12):
		return fmt.Errorf("sum of squares %v with sum %v: outcomes lie in [0, 1]", s.SumSq, s.Sum)
	}
	return nil
}

// Options are the test's settings.
type Options struct {
	// Alpha bounds the chance of ever deciding between arms that do not
	// differ, however often the report is read. Default 0.05.
	Alpha float64
	// Tau is the standard deviation of the normal prior on the difference
	// of the means that the mixture averages over: the test is most
	// sensitive to differences of about this size. Default 0.05 (five
	// points of accuracy).
	Tau float64
	// MinOutcomes is the number of outcomes each arm needs before any
	// decision, for the normal approximation. Default 100.
	MinOutcomes float64
}

// Defaults of Options.
const (
	DefaultAlpha       = 0.05
	DefaultTau         = 0.05
	DefaultMinOutcomes = 100
)

func (o Options) withDefaults() Options {
	if o.Alpha == 0 {
		o.Alpha = DefaultAlpha
	}
	if o.Tau == 0 {
		o.Tau = DefaultTau
	}
	if o.MinOutcomes == 0 {
		o.MinOutcomes = DefaultMinOutcomes
	}
	return o
}

// Validate reports options out of range (zero values take the defaults).
func (o Options) Validate() error {
	o = o.withDefaults()
	var errs []error
	if !(o.Alpha > 0 && o.Alpha < 1) {
		errs = append(errs, fmt.Errorf("alpha %v: want a number in (0, 1)", o.Alpha))
	}
	if !(o.Tau > 0) || math.IsInf(o.Tau, 0) {
		errs = append(errs, fmt.Errorf("tau %v: want a positive number", o.Tau))
	}
	if !(o.MinOutcomes >= 2) || math.IsInf(o.MinOutcomes, 0) {
		errs = append(errs, fmt.Errorf("minimum outcomes %v: want at least 2", o.MinOutcomes))
	}
	return errors.Join(errs...)
}

// Decision is what a comparison concludes.
type Decision int

// The decisions.
const (
	Undecided Decision = iota // no decision yet: the sequence still holds 0, or too few outcomes
	Better                    // the arm's mean is higher than the control's
	Worse                     // the arm's mean is lower than the control's
)

func (d Decision) String() string {
	switch d {
	case Better:
		return "better"
	case Worse:
		return "worse"
	}
	return "no decision yet"
}

// Comparison is an arm set beside the control arm.
type Comparison struct {
	// Diff is the arm's mean outcome less the control's.
	Diff float64
	// Lower and Upper bound Diff's true value, at every moment at once,
	// with probability at least 1 − Alpha (±Inf before any outcomes).
	Lower, Upper float64
	// PValue is the always-valid p-value of "no difference".
	PValue float64
	// Decision is Better or Worse once the bounds exclude 0 and both arms
	// have MinOutcomes outcomes, else Undecided.
	Decision Decision
}

// Compare sets arm beside control. The samples must pass Check and the
// options Validate.
func Compare(control, arm Sample, opt Options) Comparison {
	opt = opt.withDefaults()
	c := Comparison{Diff: arm.Mean() - control.Mean(), Lower: math.Inf(-1), Upper: math.Inf(1), PValue: 1}
	if control.N < 2 || arm.N < 2 {
		return c
	}
	// The variance of Δ̂, floored so that arms whose outcomes are all
	// alike (all 1, all 0) still give finite statistics.
	v := control.Variance()/control.N + arm.Variance()/arm.N
	v = max(v, 1/(4*control.N*control.N)+1/(4*arm.N*arm.N))
	t2 := opt.Tau * opt.Tau
	half := math.Sqrt(v * (v + t2) / t2 * (2*math.Log(1/opt.Alpha) + math.Log((v+t2)/v)))
	c.Lower, c.Upper = c.Diff-half, c.Diff+half
	logLambda := 0.5*math.Log(v/(v+t2)) + t2*c.Diff*c.Diff/(2*v*(v+t2))
	c.PValue = math.Min(1, math.Exp(-logLambda))
	if control.N >= opt.MinOutcomes && arm.N >= opt.MinOutcomes {
		switch {
		case c.Lower > 0:
			c.Decision = Better
		case c.Upper < 0:
			c.Decision = Worse
		}
	}
	return c
}
