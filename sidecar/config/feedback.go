package config

import (
	"time"

	"github.com/mergectl/react-triton/experiment/feedback"
	"github.com/mergectl/react-triton/problem"
)

// Defaults of the feedback section: those of package experiment/feedback.
const (
	DefaultFeedbackMaxEntries = feedback.DefaultMaxEntries
	DefaultFeedbackMaxAge     = feedback.DefaultMaxAge
)

// Feedback configures the outcome feedback of the experiments (package
// experiment/feedback; docs/sidecar.md, "Deciding an experiment"): each
// request served with an experiment's arm is held in a join window under
// its id until its outcome is reported (POST /v2/models/{model}/feedback,
// or the react.Feedback gRPC service), MaxAge passes, or MaxEntries newer
// requests are held. One window serves the whole process and outlives
// reloads, so this section is read at start-up only: a reload that
// changes it keeps the values in use and logs that a restart applies them.
type Feedback struct {
	// Enabled records the requests served with an arm, gives a request
	// without an id one of its own (returned in react-request-id), and
	// serves the feedback endpoints; off, they answer HTTP 501 and gRPC
	// UNIMPLEMENTED. Default true.
	Enabled bool `yaml:"enabled"`
	// MaxEntries bounds the requests held, and the ids remembered after
	// they leave (to tell a duplicate or late feedback from an unknown
	// id): about 320 bytes each, fixed costs included, which the memory
	// budget counts as feedback.EntryBytes (400: 38 MiB at the default).
	// From 1 to 16777216. Default 100000.
	MaxEntries int `yaml:"max_entries"`
	// MaxAge is how long a request stays joinable; positive. Default 1h.
	MaxAge time.Duration `yaml:"max_age"`
}

// defaultFeedback is the feedback section's defaults.
func defaultFeedback() Feedback {
	return Feedback{Enabled: true, MaxEntries: DefaultFeedbackMaxEntries, MaxAge: DefaultFeedbackMaxAge}
}

// Options returns the join window's options.
func (f Feedback) Options() feedback.Options {
	return feedback.Options{MaxEntries: f.MaxEntries, MaxAge: f.MaxAge}
}

// validateFeedback checks the feedback section. Its bounds are those of
// the window (feedback.Options), which reads 0 as its default; here the
// defaults are filled in already, so 0 is refused.
func (c *Config) validateFeedback(p *problem.List) {
	f := &c.Feedback
	if f.MaxEntries < 1 || f.MaxEntries > feedback.MaxMaxEntries {
		p.Add("feedback.max_entries", "want a number from 1 to %d, got %d", feedback.MaxMaxEntries, f.MaxEntries)
	}
	if f.MaxAge <= 0 {
		p.Add("feedback.max_age", "must be positive, got %v", f.MaxAge)
	}
}
