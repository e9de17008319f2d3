package config

import "time"

// Experiment is an A/B experiment of preference settings: the requests of
// its models are split over weighted arms, each a preference or a preset,
// by a key the request carries (such as a user id), the same way on every
// replica (package experiment).
type Experiment struct {
	// Name names the experiment in metrics and is part of every hashed
	// key: renaming it reshuffles every key.
	Name string `yaml:"name"`
	// Models are the controllable models that take part. A model takes
	// part in one experiment at most.
	Models []string `yaml:"models"`
	// Key says where a request carries its key.
	Key ExperimentKey `yaml:"key"`
	// Arms are the arms, in order: the order decides which keys move when
	// the weights change.
	Arms []Arm `yaml:"arms"`
	// Traffic is the share of keys that take part, in (0, 1]; the others
	// get the default. nil means 1.
	Traffic *float64 `yaml:"traffic"`
	// Start and End bound when the experiment runs, [Start, End); the
	// zero time leaves that side open.
	Start time.Time `yaml:"start"`
	End   time.Time `yaml:"end"`
	// Shadow is the experiment's shadow comparison of its arms; off unless
	// Shadow.Fraction is positive.
	Shadow Shadow `yaml:"shadow"`
}

// ExperimentKey names where a request carries its experiment key: a
// header (gRPC metadata key, HTTP header; case-insensitive), read first,
// and an inference request parameter.
type ExperimentKey struct {
	Header    string `yaml:"header"`
	Parameter string `yaml:"parameter"`
}

// Arm is one arm of an experiment: a preference or a preset of the models'
// components entry, and an integer weight.
type Arm struct {
	Name string `yaml:"name"`
	// Weight is the arm's share of the keys, as an integer from 0 to
	// experiment.MaxWeight, over the sum of the arms' weights. Required.
	Weight *int `yaml:"weight"`
	// Preference is a preference spec, or "none" for no correction.
	Preference string `yaml:"preference"`
	// Preset names a preset of the models' components entry.
	Preset string `yaml:"preset"`
}

// Defaults and bounds of an experiment's shadow comparison.
const (
	// DefaultShadowMaxConcurrent is Shadow.MaxConcurrent's default.
	DefaultShadowMaxConcurrent = 2
	// MaxShadowConcurrent is the largest Shadow.MaxConcurrent.
	MaxShadowConcurrent = 64
	// DefaultShadowTimeout is Shadow.Timeout's default.
	DefaultShadowTimeout = 2 * time.Second
	// MaxShadowTimeout is the longest Shadow.Timeout.
	MaxShadowTimeout = time.Minute
)

// Shadow is an experiment's shadow comparison: for a share of the requests
// served with one of its arms, the sidecar, once it has answered, also
// corrects the same backbone feature with every other arm's W_p, calls the
// heads once per arm, and counts how often each pair of arms agrees on
// the top-1 class: a signal without labels, there from the first request.
// Only models of the explicit form are compared.
type Shadow struct {
	// Fraction is the share of the requests served with an arm that are
	// compared, in [0, 1], each drawn at random. 0, the default, turns the
	// comparison off.
	Fraction float64 `yaml:"fraction"`
	// MaxConcurrent is the most comparisons of the experiment in flight at
	// once in one sidecar, over all its models; a request drawn while
	// every one is taken is not compared (and is counted as skipped). 0
	// means DefaultShadowMaxConcurrent; at most MaxShadowConcurrent.
	MaxConcurrent int `yaml:"max_concurrent"`
	// Timeout bounds each comparison, all of its head calls; 0 means
	// DefaultShadowTimeout; at most MaxShadowTimeout.
	Timeout time.Duration `yaml:"timeout"`
}

// Enabled reports whether the comparison is on: a positive Fraction.
func (s Shadow) Enabled() bool { return s.Fraction > 0 }

// Effective returns s with the defaults of the keys left at 0 filled in.
func (s Shadow) Effective() Shadow {
	if s.MaxConcurrent == 0 {
		s.MaxConcurrent = DefaultShadowMaxConcurrent
	}
	if s.Timeout == 0 {
		s.Timeout = DefaultShadowTimeout
	}
	return s
}
