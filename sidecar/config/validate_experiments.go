package config

import (
	"math"
	"slices"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/experiment"
	"github.com/mergectl/react-triton/problem"
)

// validateExperiments checks the experiments; the profile rules (r) check
// the arms' preferences and presets.
func (c *Config) validateExperiments(p *problem.List, r *ruled) {
	models := map[string]bool{} // model names
	for _, m := range c.Models {
		models[m.Name] = true
	}
	names := newNames("experiments", "the experiment's name, in metrics and in every hashed key")
	takesPart := map[string]string{} // model name → path of its first mention
	for i, e := range c.Experiments {
		path := problem.Index("experiments", i)
		names.check(p, path+".name", i, e.Name)

		if len(e.Models) == 0 {
			p.Add(path+".models", "at least one model required: the controllable models that take part")
		}
		for j, name := range e.Models {
			mp := problem.Index(path+".models", j)
			if !models[name] {
				p.Add(mp, "%q is not the name of a controllable model (models[].name)", name)
				continue
			}
			if use, dup := takesPart[name]; dup {
				p.Add(mp, "model %q is also %s: a model takes part in one experiment at most", name, use)
				continue
			}
			takesPart[name] = mp
		}

		c.validateExperimentKey(p, path+".key", e.Key)

		if e.Traffic != nil {
			if err := experiment.CheckTraffic(*e.Traffic); err != nil {
				p.Add(path+".traffic", "%v", err)
			}
		}
		if err := control.CheckWindow(e.Start, e.End); err != nil {
			p.Add(path+".end", "%v", err)
		}

		switch {
		case len(e.Arms) == 0:
			p.Add(path+".arms", "at least one arm required")
		case len(e.Arms) > experiment.MaxArms:
			p.Add(path+".arms", "%d arms: at most %d", len(e.Arms), experiment.MaxArms)
		}
		armNames := newNames("arms", "the arm's name, in metrics and in react-arm")
		total := 0
		for j, a := range e.Arms {
			ap := problem.Index(path+".arms", j)
			armNames.check(p, ap+".name", j, a.Name)
			switch {
			case a.Weight == nil:
				p.Add(ap+".weight", "required: an integer from 0 to %d", experiment.MaxWeight)
			case *a.Weight < 0 || *a.Weight > experiment.MaxWeight:
				p.Add(ap+".weight", "%d: want an integer from 0 to %d", *a.Weight, experiment.MaxWeight)
			default:
				total += *a.Weight
			}
			r.take(p, ap)
		}
		validateShadow(p, path+".shadow", e.Shadow, len(e.Arms))
		if len(e.Arms) > 0 && total == 0 && !slices.ContainsFunc(e.Arms, func(a Arm) bool { return a.Weight == nil }) {
			p.Add(path+".arms", "the weights sum to 0: give at least one arm a positive weight")
		}
	}
}

// validateExperimentKey checks where an experiment reads its key.
func (c *Config) validateExperimentKey(p *problem.List, path string, k ExperimentKey) {
	if k.Header == "" && k.Parameter == "" {
		p.Add(path, "give header, parameter or both: where requests carry their key (such as a user id)")
		return
	}
	if k.Header != "" {
		if msg := control.CheckKeyHeader(k.Header); msg != "" {
			p.Add(path+".header", "%s", msg)
		}
	}
	if k.Parameter != "" {
		if msg := control.CheckKeyParameter(k.Parameter); msg != "" {
			p.Add(path+".parameter", "%s", msg)
		}
	}
}

// validateShadow checks an experiment's shadow comparison; arms is the
// number of the experiment's arms.
func validateShadow(p *problem.List, path string, s Shadow, arms int) {
	if math.IsNaN(s.Fraction) || s.Fraction < 0 || s.Fraction > 1 {
		p.Add(path+".fraction", "%v: want a number in [0, 1], the share of the requests served with an arm that are also run through the other arms (0 turns the comparison off)", s.Fraction)
	} else if s.Fraction > 0 && arms == 1 {
		p.Add(path+".fraction", "the experiment has one arm: a shadow comparison needs two at least")
	}
	if s.MaxConcurrent < 0 || s.MaxConcurrent > MaxShadowConcurrent {
		p.Add(path+".max_concurrent", "%d: want an integer from 1 to %d, or 0 for the default (%d)", s.MaxConcurrent, MaxShadowConcurrent, DefaultShadowMaxConcurrent)
	}
	if s.Timeout < 0 || s.Timeout > MaxShadowTimeout {
		p.Add(path+".timeout", "%v: want a positive duration of at most 1m, or 0 for the default (%v)", s.Timeout, DefaultShadowTimeout)
	}
}
