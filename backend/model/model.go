package model

import (
	"context"
	"errors"
	"io/fs"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/problem"
	"github.com/mergectl/react-triton/react"
)

// Model is one loaded react model: its configuration, its components and
// the profile that resolves preferences over them, with a W_p cache shared
// by all of the model's instances. It is immutable once loaded and safe for
// concurrent use; a reload (a new version, or Triton's load call) builds a
// new Model and the old one is dropped with its last instance.
type Model struct {
	cfg     *Config
	path    string // the components file, resolved
	profile *control.Profile
	// experiment is the model's experiment, nil for none.
	experiment *control.Experiment
	d          int
	elem       int // bytes per element of the embedding's datatype
}

// Load resolves the configuration's components file against versionDir
// (the directory of the model version being loaded), reads and verifies
// it, checks it against the configured tensors, and solves the default and
// preset preferences. It fails with every problem it finds, as a
// problem.List (formatted one per line); a Model is either complete or not
// returned.
func Load(ctx context.Context, cfg *Config, versionDir string) (*Model, error) {
	path := cfg.componentsPath(versionDir)
	comps, sum, err := control.LoadComponents(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, problem.List{problem.New("parameters."+ParamComponents, "no components file at %s: calibrate one against the running backbone "+
			"and experts (calibrate fit --triton ...), then put it there (calibrate upgrade writes it as a new "+
			"version of this model): docs/upgrade.md", path)}.Lines()
	}
	if err != nil {
		return nil, problem.List{problem.New("parameters."+ParamComponents,
			"%v; calibrate it again (calibrate fit) if the file is damaged: docs/upgrade.md", err)}.Lines()
	}
	if d := cfg.D(); d != comps.D {
		return nil, problem.List{problem.New("input[0]", "dims %v: the components file %s has D = %d", cfg.Input.Dims, path, comps.D)}.Lines()
	}
	opts := react.DefaultOptions(comps)
	if cfg.Beta != nil {
		opts.Beta = *cfg.Beta
	}
	if cfg.Normalization != "" {
		opts.Normalization = cfg.Normalization
	}
	var experiments []control.ExperimentSpec
	if cfg.Experiment != nil {
		experiments = []control.ExperimentSpec{cfg.Experiment.ExperimentSpec}
	}
	cache := control.NewCacheWith(control.CacheOptions{MaxBytes: cfg.CacheMaxBytes, MaxEntries: cfg.CacheSize, MaxPendingSolves: -1})
	profile, err := control.NewProfile(ctx, control.ProfileSpec{
		Name:                cfg.Name,
		Components:          comps,
		Checksum:            sum,
		Options:             opts,
		Default:             cfg.DefaultPreference,
		Presets:             cfg.Presets,
		Experiments:         experiments,
		MaxPreferenceLength: cfg.MaxPreferenceLength,
		Cache:               cache,
	})
	if err != nil {
		return nil, cfg.profileError(err)
	}
	m := &Model{cfg: cfg, path: path, profile: profile, d: comps.D, elem: elemSize(cfg.Input.Datatype)}
	if cfg.Experiment != nil {
		m.experiment = profile.Experiment(cfg.Experiment.Name)
	}
	return m, nil
}

// profileError names each of NewProfile's problems by its parameter.
func (c *Config) profileError(err error) error {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	var l problem.List
	for _, e := range errs {
		var p *problem.Problem
		var ee *control.ExperimentError
		switch {
		case errors.As(e, &p):
			p.Path = c.parameterPath("profiles[0]." + p.Path)
		case errors.As(e, &ee):
			p = c.experimentError(ee)
		default:
			p = problem.New("", "%v", e)
		}
		l = append(l, p)
	}
	return l.Lines()
}

// elemSize is the size in bytes of one element of an embedding datatype.
func elemSize(dt string) int {
	if dt == "FP32" {
		return 4
	}
	return 2
}

// Config returns the model's configuration.
func (m *Model) Config() *Config { return m.cfg }

// ComponentsPath returns the components file in use.
func (m *Model) ComponentsPath() string { return m.path }

// D returns the embedding dimension.
func (m *Model) D() int { return m.d }

// Experiment returns the model's experiment, nil for none.
func (m *Model) Experiment() *control.Experiment { return m.experiment }

// Profile returns the profile that resolves the model's preferences.
func (m *Model) Profile() *control.Profile { return m.profile }
