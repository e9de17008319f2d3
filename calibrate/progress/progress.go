package progress

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/mergectl/react-triton/config"
)

// Reporter shows a long run's progress, one task after another.
type Reporter interface {
	// Start begins a task of total samples, done of them already counted
	// (a resumed checkpoint).
	Start(task string, done, total int64)
	// Add counts n more samples of the task.
	Add(n int)
	// End ends the task.
	End()
}

// logInterval is how often the log reporter writes a line.
var logInterval = 10 * time.Second

// New returns the reporter of a progress mode (config.ProgressAuto and the
// others): a bar per task (always, or auto on a terminal), a line every
// logInterval (log, or auto elsewhere), or nothing (never).
func New(mode string, w io.Writer) Reporter {
	switch {
	case mode == config.ProgressNever:
		return nopReporter{}
	case mode == config.ProgressAlways, mode == config.ProgressAuto && isTerminal(w):
		return &barReporter{w: w}
	}
	return &logReporter{w: w}
}

// nopReporter shows nothing.
type nopReporter struct{}

func (nopReporter) Start(string, int64, int64) {}
func (nopReporter) Add(int)                    {}
func (nopReporter) End()                       {}

// barReporter draws one progress bar per task: samples done, samples/s and
// the time left.
type barReporter struct {
	w   io.Writer
	bar *progressbar.ProgressBar
}

func (r *barReporter) Start(task string, done, total int64) {
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

func (r *barReporter) Add(n int) { r.bar.Add(n) }

func (r *barReporter) End() {
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

func (r *logReporter) Start(task string, done, total int64) {
	now := time.Now()
	r.task, r.done, r.total, r.startDone, r.began, r.last = task, done, total, done, now, now
	if done > 0 {
		fmt.Fprintf(r.w, "task %s: resuming at %d of %d samples\n", task, done, total)
	}
}

func (r *logReporter) Add(n int) {
	r.done += int64(n)
	if time.Since(r.last) >= logInterval {
		r.line()
	}
}

func (r *logReporter) End() { r.line() }

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

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
