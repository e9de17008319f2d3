package control

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/mergectl/react-triton/experiment"
)

// ExperimentSpec is an A/B experiment over a profile's preferences: weighted
// arms, each a preference or a preset of the profile.
type ExperimentSpec struct {
	// Name names the experiment in metrics and is part of every hashed key.
	Name string
	// Arms are the arms, in order (the order decides which keys move when
	// weights change: see package experiment).
	Arms []ArmSpec
	// Traffic is the share of keys that take part, in (0, 1]; 0 means 1.
	// The others get the default preference.
	Traffic float64
	// Start and End bound when the experiment runs, [Start, End); a zero
	// time leaves that side open. Outside it, requests get the default.
	Start, End time.Time
}

// ArmSpec is one arm: its name, integer weight, and either a preference
// spec (or None) or the name of one of the profile's presets.
type ArmSpec struct {
	Name       string
	Weight     int
	Preference string
	Preset     string
}

// ExperimentError is a problem with an experiment of a ProfileSpec: with
// one of its arms (Arm ≥ 0, Field "preference" or "preset"), or with the
// experiment as a whole (Arm -1).
type ExperimentError struct {
	Experiment string
	Arm        int
	Field      string
	Err        error
}

// Error implements error.
func (e *ExperimentError) Error() string {
	if e.Arm < 0 {
		return fmt.Sprintf("experiment %s: %v", e.Experiment, e.Err)
	}
	return fmt.Sprintf("experiment %s: arm %d: %s: %v", e.Experiment, e.Arm, e.Field, e.Err)
}

// Unwrap returns the problem.
func (e *ExperimentError) Unwrap() error { return e.Err }

// Experiment is an experiment resolved against a profile: its split and
// each arm's Choice, whose W_p the profile pinned when it was built. It is
// immutable and safe for concurrent use.
type Experiment struct {
	split      *experiment.Split
	arms       []Choice
	start, end time.Time
	// random draws the hashes of a request without a key.
	random func() uint32
}

// Name returns the experiment's name.
func (e *Experiment) Name() string { return e.split.Name() }

// Arms returns the arms' names, in order.
func (e *Experiment) Arms() []string {
	names := make([]string, len(e.arms))
	for i, c := range e.arms {
		names[i] = c.Arm
	}
	return names
}

// Choices returns each arm's choice, in order, as the profile pinned it
// and Resolve serves it: the arm's preference, or its preset's (Preset
// names it), with Source SourceArm and no Assignment. Its W_p is found
// by Profile.Matrix, never solved.
func (e *Experiment) Choices() []Choice { return slices.Clone(e.arms) }

// Split returns the experiment's assignment rule.
func (e *Experiment) Split() *experiment.Split { return e.split }

// Running reports whether the experiment runs at t: Start ≤ t < End.
func (e *Experiment) Running(t time.Time) bool {
	return (e.start.IsZero() || !t.Before(e.start)) && (e.end.IsZero() || t.Before(e.end))
}

// assign returns the choice for a request that named no preference or
// preset while the experiment runs: the arm of its key, a random arm when
// it has none (an empty key counts as none), or the default when the key
// is outside the traffic share.
func (e *Experiment) assign(key string, hasKey bool, def Choice) Choice {
	var i int
	how := AssignKey
	if hasKey && key != "" {
		i = e.split.Assign(key)
	} else {
		how = AssignRandom
		i = e.split.Pick(e.random(), e.random())
	}
	if i < 0 {
		def.Experiment, def.Assignment = e.Name(), AssignExcluded
		return def
	}
	c := e.arms[i]
	c.Assignment = how
	return c
}

// newExperiment resolves an experiment spec against the profile, pinning
// each arm's W_p with pin. It reports every problem as *ExperimentError.
func (p *Profile) newExperiment(s ExperimentSpec, pin func(spec string) (Choice, error)) (*Experiment, []error) {
	var errs []error
	traffic := s.Traffic
	if traffic == 0 {
		traffic = 1
	}
	arms := make([]experiment.Arm, len(s.Arms))
	for i, a := range s.Arms {
		arms[i] = experiment.Arm{Name: a.Name, Weight: a.Weight}
	}
	split, err := experiment.NewSplit(s.Name, arms, traffic)
	if err != nil {
		errs = append(errs, &ExperimentError{Experiment: s.Name, Arm: -1, Err: err})
	}
	if err := CheckWindow(s.Start, s.End); err != nil {
		errs = append(errs, &ExperimentError{Experiment: s.Name, Arm: -1, Err: fmt.Errorf("end %w", err)})
	}
	e := &Experiment{split: split, arms: make([]Choice, len(s.Arms)), start: s.Start, end: s.End, random: rand.Uint32}
	for i, a := range s.Arms {
		var c Choice
		switch {
		case (a.Preference == "") == (a.Preset == ""):
			errs = append(errs, &ExperimentError{Experiment: s.Name, Arm: i, Field: "preference",
				Err: fmt.Errorf("arm %q: give either a preference or a preset", a.Name)})
			continue
		case a.Preset != "":
			pc, ok := p.presets[a.Preset]
			if !ok {
				errs = append(errs, &ExperimentError{Experiment: s.Name, Arm: i, Field: "preset",
					Err: fmt.Errorf("unknown preset %q (presets: %s)", a.Preset, namesOrNone(p.presetNames))})
				continue
			}
			c = pc
		default:
			var err error
			if c, err = pin(a.Preference); err != nil {
				errs = append(errs, &ExperimentError{Experiment: s.Name, Arm: i, Field: "preference", Err: err})
				continue
			}
		}
		c.Source, c.Experiment, c.Arm = SourceArm, s.Name, a.Name
		e.arms[i] = c
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return e, nil
}

// Experiment returns the profile's experiment of that name, nil if none.
func (p *Profile) Experiment(name string) *Experiment { return p.experiments[name] }
