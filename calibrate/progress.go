package calibrate

import (
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/config"
	"github.com/mergectl/react-triton/react"
)

// reporter shows a fit's progress, one task after another.
type reporter interface {
	// start begins a task of total samples, done of them already in its
	// sums (a resumed checkpoint).
	start(task string, done, total int64)
	// add counts n more samples of the task.
	add(n int)
	// end ends the task.
	end()
}

// logInterval is how often the log reporter writes a line.
var logInterval = 10 * time.Second

// newReporter returns the reporter of a progress mode: a bar per task
// (always, or auto on a terminal), a line every logInterval (log, or auto
// elsewhere), or nothing (never).
func newReporter(mode string, w io.Writer) reporter {
	switch {
	case mode == config.ProgressNever:
		return nopReporter{}
	case mode == config.ProgressAlways, mode == config.ProgressAuto && isTerminal(w):
		return &barReporter{w: w}
	}
	return &logReporter{w: w}
}

type nopReporter struct{}

func (nopReporter) start(string, int64, int64) {}
func (nopReporter) add(int)                    {}
func (nopReporter) end()                       {}

// barReporter draws one progress bar per task: samples done, samples/s and
// the time left.
type barReporter struct {
	w   io.Writer
	bar *progressbar.ProgressBar
}

func (r *barReporter) start(task string, done, total int64) {
	r.bar = progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(r.w),
		progressbar.OptionSetDescription("task "+task),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("samples"),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(r.w) }),
	)
	if done > 0 {
		r.bar.Set64(done)
	}
}

func (r *barReporter) add(n int) { r.bar.Add(n) }

func (r *barReporter) end() {
	r.bar.Finish()
	r.bar = nil
}

// logReporter writes a line per task every logInterval, and one when the
// task ends, for logs rather than terminals.
type logReporter struct {
	w           io.Writer
	mu          sync.Mutex
	task        string
	done, total int64
	startDone   int64
	began, last time.Time
}

func (r *logReporter) start(task string, done, total int64) {
	now := time.Now()
	r.task, r.done, r.total, r.startDone, r.began, r.last = task, done, total, done, now, now
	if done > 0 {
		fmt.Fprintf(r.w, "task %s: resuming at %d of %d samples\n", task, done, total)
	}
}

func (r *logReporter) add(n int) {
	r.done += int64(n)
	if time.Since(r.last) >= logInterval {
		r.line()
	}
}

func (r *logReporter) end() { r.line() }

func (r *logReporter) line() {
	r.last = time.Now()
	elapsed := r.last.Sub(r.began).Seconds()
	rate := float64(r.done-r.startDone) / max(elapsed, 1e-9)
	eta := "?"
	if rate > 0 {
		eta = (time.Duration(float64(r.total-r.done)/rate) * time.Second).Round(time.Second).String()
	}
	fmt.Fprintf(r.w, "task %s: %d/%d samples (%.0f%%), %.0f samples/s, ETA %s\n",
		r.task, r.done, r.total, 100*float64(r.done)/float64(max(r.total, 1)), rate, eta)
}

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
