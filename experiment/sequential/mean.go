package sequential

import "math"

// MeanInterval bounds an arm's mean outcome at every moment at once with
// probability at least 1 − Alpha: the normal-mixture confidence sequence
// of Compare for one sample, mean ± √(v (v + τ²) / τ² · (2 ln(1/α) +
// ln((v + τ²) / v))) with v = s²/n (floored at 1/(4n²), as Compare floors
// it), clipped to [0, 1], where outcomes lie. Before two outcomes it is
// [0, 1]. The sample must pass Check and the options Validate.
func MeanInterval(s Sample, opt Options) (lower, upper float64) {
	if s.N < 2 {
		return 0, 1
	}
	opt = opt.withDefaults()
	v := max(s.Variance()/s.N, 1/(4*s.N*s.N))
	t2 := opt.Tau * opt.Tau
	half := math.Sqrt(v * (v + t2) / t2 * (2*math.Log(1/opt.Alpha) + math.Log((v+t2)/v)))
	m := s.Mean()
	return max(m-half, 0), min(m+half, 1)
}
