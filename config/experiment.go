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
