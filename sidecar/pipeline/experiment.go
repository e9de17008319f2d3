package pipeline

import (
	"errors"
	"fmt"
	"slices"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/sidecar/config"
)

// experimentSpecs returns the configuration's experiments as profile specs,
// by the name of the components entry each applies to: an experiment goes
// to the profile of every components entry one of its models uses, whose
// tasks and presets its arms are resolved against.
func experimentSpecs(cfg *config.Config) map[string][]control.ExperimentSpec {
	components := make(map[string]string, len(cfg.Models)) // model → components
	for _, m := range cfg.Models {
		components[m.Name] = m.Components
	}
	out := make(map[string][]control.ExperimentSpec)
	for _, e := range cfg.Experiments {
		spec := control.ExperimentSpec{Name: e.Name, Start: e.Start, End: e.End}
		if e.Traffic != nil {
			spec.Traffic = *e.Traffic
		}
		for _, a := range e.Arms {
			arm := control.ArmSpec{Name: a.Name, Preference: a.Preference, Preset: a.Preset}
			if a.Weight != nil {
				arm.Weight = *a.Weight
			}
			spec.Arms = append(spec.Arms, arm)
		}
		var done []string
		for _, m := range e.Models {
			c := components[m]
			if !slices.Contains(done, c) {
				done = append(done, c)
				out[c] = append(out[c], spec)
			}
		}
	}
	return out
}

// experimentProblem records a profile's *control.ExperimentError at its
// path in the configuration; it reports false for other errors.
func (b *builder) experimentProblem(components string, err error) bool {
	var ee *control.ExperimentError
	if !errors.As(err, &ee) {
		return false
	}
	path := "experiments"
	for i, e := range b.cfg.Experiments {
		if e.Name == ee.Experiment {
			path = fmt.Sprintf("experiments[%d]", i)
			break
		}
	}
	if ee.Arm >= 0 {
		path += fmt.Sprintf(".arms[%d].%s", ee.Arm, ee.Field)
	}
	msg := fmt.Sprintf("%v (components %q)", ee.Err, components)
	for _, p := range b.problems {
		if p.Path == path && p.Msg == msg {
			return true
		}
	}
	b.problem(path, false, "%s", msg)
	return true
}

// setExperiment gives a model the experiment it takes part in, if any.
func (m *Model) setExperiment(cfg *config.Config) {
	for _, e := range cfg.Experiments {
		if slices.Contains(e.Models, m.name) {
			m.experiment = m.profile.Experiment(e.Name)
			m.keyHeader, m.keyParameter = e.Key.Header, e.Key.Parameter
			return
		}
	}
}

// Experiment returns the experiment the model takes part in, nil for none.
func (m *Model) Experiment() *control.Experiment { return m.experiment }

// KeyHeader returns the header (gRPC metadata key) that carries the key of
// the model's experiment, "" for none.
func (m *Model) KeyHeader() string { return m.keyHeader }
