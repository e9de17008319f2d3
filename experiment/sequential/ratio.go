package sequential

import (
	"errors"
	"fmt"

	"gonum.org/v1/gonum/stat/distuv"
)

// DefaultMismatchP is the p-value below which SampleRatio reports a
// mismatch: strict, because a real mismatch gives p-values far smaller,
// and the check is read as often as the report.
const DefaultMismatchP = 0.001

// Ratio is the sample-ratio check of an experiment's arms.
type Ratio struct {
	// Expected is each arm's expected count, from the weights.
	Expected []float64
	// ChiSquare is Pearson's statistic over the arms with a positive
	// weight, with DF degrees of freedom; PValue its upper tail.
	ChiSquare, PValue float64
	DF                int
	// Mismatch reports PValue below the threshold, or requests counted in
	// an arm of weight 0.
	Mismatch bool
}

// SampleRatio checks the arms' counts against their weights (the split's
// integer weights, or any nonnegative numbers with a positive sum) with
// Pearson's χ² test; threshold is the p-value below which it reports a
// mismatch (0: DefaultMismatchP).
func SampleRatio(counts, weights []float64, threshold float64) (Ratio, error) {
	if len(counts) != len(weights) {
		return Ratio{}, fmt.Errorf("sample ratio: %d counts for %d weights", len(counts), len(weights))
	}
	if threshold == 0 {
		threshold = DefaultMismatchP
	}
	var n, w float64
	var errs []error
	for i := range counts {
		if !(counts[i] >= 0) || !(weights[i] >= 0) {
			errs = append(errs, fmt.Errorf("arm %d: count %v, weight %v: want numbers ≥ 0", i+1, counts[i], weights[i]))
		}
		n += counts[i]
		w += weights[i]
	}
	if !(w > 0) {
		errs = append(errs, errors.New("the weights sum to 0"))
	}
	if err := errors.Join(errs...); err != nil {
		return Ratio{}, fmt.Errorf("sample ratio: %w", err)
	}
	r := Ratio{Expected: make([]float64, len(counts)), PValue: 1}
	for i := range counts {
		r.Expected[i] = n * weights[i] / w
		switch {
		case weights[i] == 0:
			if counts[i] > 0 {
				r.Mismatch = true
			}
		case n > 0:
			d := counts[i] - r.Expected[i]
			r.ChiSquare += d * d / r.Expected[i]
			r.DF++
		}
	}
	r.DF = max(r.DF-1, 0)
	if r.DF > 0 {
		r.PValue = distuv.ChiSquared{K: float64(r.DF)}.Survival(r.ChiSquare)
	}
	r.Mismatch = r.Mismatch || r.PValue < threshold
	return r, nil
}
