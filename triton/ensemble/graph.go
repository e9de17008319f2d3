// Package ensemble reads the step graph of a Triton ensemble: which step
// produces and which steps consume each tensor, and the order the steps
// can run in.
package ensemble

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mergectl/react-triton/triton/tritonpb"
)

// Graph is an ensemble's steps and its tensors.
type Graph struct {
	Steps []*tritonpb.ModelEnsembling_Step
	// Inputs and Outputs are the ensemble's own tensors.
	Inputs, Outputs []string
	producers       map[string][]int // tensor → steps whose output_map names it
	consumers       map[string][]int // tensor → steps whose input_map names it
}

// New reads an ensemble's configuration.
func New(cfg *tritonpb.ModelConfig) (*Graph, error) {
	es := cfg.GetEnsembleScheduling()
	if es == nil {
		return nil, fmt.Errorf("model %q is not an ensemble (no ensemble_scheduling)", cfg.GetName())
	}
	g := &Graph{Steps: es.GetStep(), producers: map[string][]int{}, consumers: map[string][]int{}}
	for _, in := range cfg.GetInput() {
		g.Inputs = append(g.Inputs, in.GetName())
	}
	for _, out := range cfg.GetOutput() {
		g.Outputs = append(g.Outputs, out.GetName())
	}
	for i, s := range g.Steps {
		for _, t := range sortedValues(s.GetOutputMap()) {
			g.producers[t] = append(g.producers[t], i)
		}
		for _, t := range sortedValues(s.GetInputMap()) {
			g.consumers[t] = append(g.consumers[t], i)
		}
	}
	return g, nil
}

// sortedValues returns a map's distinct values, sorted.
func sortedValues(m map[string]string) []string {
	var v []string
	for _, t := range m {
		if !slices.Contains(v, t) {
			v = append(v, t)
		}
	}
	slices.Sort(v)
	return v
}

// Producers returns the steps whose output is tensor.
func (g *Graph) Producers(tensor string) []int { return g.producers[tensor] }

// Consumers returns the steps that take tensor.
func (g *Graph) Consumers(tensor string) []int { return g.consumers[tensor] }

// Site is where a tensor is made and used.
type Site struct {
	Tensor string
	// Step produces the tensor, as its output Output (the key of its
	// output_map).
	Step   int
	Model  string
	Output string
	// Consumers are the steps that take it.
	Consumers []int
}

// Locate finds where tensor is made and used: produced by exactly one step
// and taken by at least one, as a tensor that can be corrected between
// steps must be. Every problem is reported at once.
func (g *Graph) Locate(tensor string) (Site, error) {
	var problems []string
	prod, cons := g.producers[tensor], g.consumers[tensor]
	switch {
	case len(prod) == 0 && slices.Contains(g.Inputs, tensor):
		problems = append(problems, fmt.Sprintf("tensor %q is an input of the ensemble, produced by no step", tensor))
	case len(prod) == 0:
		problems = append(problems, fmt.Sprintf("no step produces tensor %q (tensors: %s)", tensor, strings.Join(g.Tensors(), ", ")))
	case len(prod) > 1:
		problems = append(problems, fmt.Sprintf("tensor %q is produced by %d steps (%s): want one", tensor, len(prod), g.describe(prod)))
	}
	if len(cons) == 0 && len(prod) > 0 {
		problems = append(problems, fmt.Sprintf("no step takes tensor %q: a correction must be consumed by a step", tensor))
	}
	if len(problems) > 0 {
		return Site{}, errors.New(strings.Join(problems, "; "))
	}
	s := Site{Tensor: tensor, Step: prod[0], Model: g.Steps[prod[0]].GetModelName(), Consumers: cons}
	for k, v := range g.Steps[prod[0]].GetOutputMap() {
		if v == tensor {
			s.Output = k
		}
	}
	return s, nil
}

// Tensors lists every tensor of the graph, sorted.
func (g *Graph) Tensors() []string {
	var all []string
	for t := range g.producers {
		all = append(all, t)
	}
	for t := range g.consumers {
		if !slices.Contains(all, t) {
			all = append(all, t)
		}
	}
	slices.Sort(all)
	return all
}

// Order returns the steps in dependency order, as levels: each level's
// steps take only the ensemble's inputs and the tensors of earlier levels,
// so that the steps of a level can run at once. A step that waits for a
// tensor nothing produces, or a cycle, is an error.
func (g *Graph) Order() ([][]int, error) {
	have := map[string]bool{}
	for _, t := range g.Inputs {
		have[t] = true
	}
	done := make([]bool, len(g.Steps))
	var levels [][]int
	for left := len(g.Steps); left > 0; {
		var level []int
		for i, s := range g.Steps {
			if done[i] {
				continue
			}
			ready := true
			for _, t := range s.GetInputMap() {
				ready = ready && have[t]
			}
			if ready {
				level = append(level, i)
			}
		}
		if len(level) == 0 {
			var stuck []int
			for i := range g.Steps {
				if !done[i] {
					stuck = append(stuck, i)
				}
			}
			return nil, fmt.Errorf("steps %s wait for tensors no step before them produces (a cycle, or a tensor nothing makes)", g.describe(stuck))
		}
		for _, i := range level {
			done[i] = true
			for _, t := range g.Steps[i].GetOutputMap() {
				have[t] = true
			}
		}
		left -= len(level)
		levels = append(levels, level)
	}
	return levels, nil
}

// describe names steps for messages: `step 1 ("vit")`.
func (g *Graph) describe(steps []int) string {
	parts := make([]string, len(steps))
	for i, s := range steps {
		parts[i] = fmt.Sprintf("step %d (%q)", s, g.Steps[s].GetModelName())
	}
	return strings.Join(parts, ", ")
}
