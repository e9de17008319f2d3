package evaluate

import (
	"fmt"
	"slices"

	"github.com/mergectl/react-triton/react"
)

// Aggregations of single-task corrections an evaluation can compare.
const (
	AggReACT = "react" // W_p = A_p C_p⁻¹ (the method)
	AggNaive = "naive" // Σ p_t Ŵ_t
	AggPolar = "polar" // polar factors averaged separately
)

// Methods of a Row besides the aggregations.
const (
	MethodIndividual = "individual" // each task's expert, expert_t → head_t
	MethodMerged     = "merged"     // the uncorrected backbone
	MethodOracle     = "oracle"     // ReACT with statistics fitted on the test split itself
)

// Backbone is a merged backbone and the components calibrated on it. Its
// model is Components.Backbone; backbones that share a model share its
// features.
type Backbone struct {
	Label      string // as tables name it, e.g. "TA"; unique
	Components *react.Components
}

// Config says what an evaluation computes.
type Config struct {
	Tasks     []*Task
	Heads     map[string]react.ModelRef // the head of each task
	Backbones []Backbone
	// Sets are the preference sets; every aggregation, β and normalisation
	// is evaluated on each of their points.
	Sets         []Set
	Aggregations []string              // default: react only
	Betas        []float64             // default: each file's own β
	Norms        []react.Normalization // default: each file's own normalisation
	// Oracle adds, per backbone model, ReACT with statistics accumulated
	// on the evaluation data's own features (merged → expert), with every
	// β and normalisation evaluated (Betas, Norms): the ceiling of a linear correction fitted
	// with the method's objective, which no user can fit.
	Oracle bool
	// Served also checks each preference of the sets end to end through
	// the sidecar, for each components file the sidecar serves (see
	// Served).
	Served []Served
	// Progress, if not nil, is told of each finished step.
	Progress func(done, total int)
}

// TaskNames returns the names of the tasks, in order.
func (c *Config) TaskNames() []string {
	names := make([]string, len(c.Tasks))
	for i, t := range c.Tasks {
		names[i] = t.Name
	}
	return names
}

// validate checks everything before any model runs.
func (c *Config) validate() error {
	if len(c.Tasks) == 0 {
		return fmt.Errorf("no tasks")
	}
	if len(c.Backbones) == 0 {
		return fmt.Errorf("no components")
	}
	names := c.TaskNames()
	for i, t := range c.Tasks {
		if slices.Contains(names[:i], t.Name) {
			return fmt.Errorf("task %s given twice", t.Name)
		}
		if _, ok := c.Heads[t.Name]; !ok {
			return fmt.Errorf("task %s has no head", t.Name)
		}
	}
	labels := map[string]bool{}
	for _, b := range c.Backbones {
		if labels[b.Label] {
			return fmt.Errorf("two components labelled %q", b.Label)
		}
		labels[b.Label] = true
		for _, t := range names {
			st, ok := b.Components.Task(t)
			if !ok {
				return fmt.Errorf("components %s: no task %s (it has %v)", b.Label, t, b.Components.TaskNames())
			}
			if st.Expert.Name == "" {
				return fmt.Errorf("components %s: task %s names no expert, which the normalised accuracy needs", b.Label, t)
			}
		}
		if b.Components.Backbone.Name == "" {
			return fmt.Errorf("components %s name no backbone model", b.Label)
		}
	}
	for _, a := range c.Aggregations {
		if a != AggReACT && a != AggNaive && a != AggPolar {
			return fmt.Errorf("unknown aggregation %q (want %s, %s or %s)", a, AggReACT, AggNaive, AggPolar)
		}
	}
	for _, b := range c.Betas {
		if err := react.ValidateBeta(b); err != nil {
			return err
		}
	}
	if err := c.validateServed(); err != nil {
		return err
	}
	for _, s := range c.Sets {
		for _, p := range s.Points {
			if !slices.Equal(p.P.Tasks(), names) {
				return fmt.Errorf("preference set %s is over tasks %v, not %v", s.Name, p.P.Tasks(), names)
			}
		}
	}
	return nil
}
