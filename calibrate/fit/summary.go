package fit

import (
	"fmt"
	"math"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/react"
)

// taskSummary is what a fit says of each task at the end.
type taskSummary struct {
	task    string
	n       int64         // samples in the sums
	ran     int64         // samples sent or read by this run (not resumed)
	elapsed time.Duration // this run's time on the task
	cond    float64       // condition number of C_t
}

func (s taskSummary) String() string {
	rate := float64(s.ran) / max(s.elapsed.Seconds(), 1e-9)
	return fmt.Sprintf("task %s: N=%d, %d samples in %v (%.0f samples/s), cond(C)=%.3g",
		s.task, s.n, s.ran, s.elapsed.Round(time.Millisecond), rate, s.cond)
}

// conditionNumber returns the 2-norm condition number of C = G + βI, or of
// G/N + βI with the mean normalisation, from an accumulator's sums: the
// ratio of its largest to its smallest eigenvalue, +Inf when C is singular.
func conditionNumber(acc *react.Accumulator, beta float64, norm react.Normalization) float64 {
	n, _, g := acc.State()
	d := acc.D()
	c := mat.NewSymDense(d, append([]float64(nil), g...)) // the upper triangle of g is G
	scale := 1.0
	if norm == react.NormMean && n > 0 {
		scale = 1 / float64(n)
	}
	c.ScaleSym(scale, c)
	for i := range d {
		c.SetSym(i, i, c.At(i, i)+beta)
	}
	var eig mat.EigenSym
	if !eig.Factorize(c, false) {
		return math.NaN()
	}
	v := eig.Values(nil)
	lo, hi := v[0], v[len(v)-1]
	if lo <= 0 {
		return math.Inf(1)
	}
	return hi / lo
}
