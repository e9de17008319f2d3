package ensemble

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mergectl/react-triton/triton/tritonpb"
)

// Graph is the step graph of a Triton ensemble, as its configuration's
// ensemble_scheduling declares it, with the tensor to correct. It is
// immutable.
type Graph struct {
	ensemble string
	steps    []Step
	// inputs and outputs are the ensemble's tensor names, in configuration
	// order.
	inputs, outputs []string
	// producer maps each tensor a step produces to that step.
	producer map[string]int
	// consumers maps each tensor to the steps that read it, in step order,
	// each once.
	consumers map[string][]int
	// correct is the tensor W_p corrects.
	correct string
}

// Step is one step of an ensemble: a model version, and how its tensors
// are wired to the ensemble's.
type Step struct {
	// Model and Version name the step's model; Version is "" for
	// Triton's choice (the configuration's -1).
	Model, Version string
	// In and Out map the step model's tensors to the ensemble's, ordered
	// by the model's tensor name.
	In, Out []Binding
}

// Binding wires one tensor of a step model to one of the ensemble.
type Binding struct {
	Name   string // the step model's tensor name
	Tensor string // the ensemble's tensor name
}

// Problem is one reason an ensemble's graph cannot be served with its
// tensor corrected. Key is the configuration key it concerns: "name" for
// the ensemble itself, "correct" for the tensor.
type Problem struct {
	Key, Msg string
}

// Ensemble returns the ensemble's name.
func (g *Graph) Ensemble() string { return g.ensemble }

// Steps returns the steps, in configuration order. The caller must not
// modify them.
func (g *Graph) Steps() []Step { return g.steps }

// Outputs returns the ensemble's outputs, in configuration order.
func (g *Graph) Outputs() []string { return g.outputs }

// Correct returns the tensor to correct.
func (g *Graph) Correct() string { return g.correct }

// Producer returns the step that produces a tensor, and false for a
// tensor no step produces.
func (g *Graph) Producer(tensor string) (int, bool) {
	i, ok := g.producer[tensor]
	return i, ok
}

// Readers returns the steps that read a tensor, in step order, each once.
func (g *Graph) Readers(tensor string) []int { return g.consumers[tensor] }

// Describe names step i in messages: `steps[1] (model "head_a")`.
func (g *Graph) Describe(i int) string {
	return fmt.Sprintf("steps[%d] (model %q)", i, g.steps[i].Model)
}

// New reads the step graph of an ensemble's configuration and checks
// it, and the tensor to correct, reporting every problem at once: every
// step names a model; every tensor a step reads is an input of the
// ensemble or the output of exactly one step; every output of the ensemble
// is produced by a step; the steps can run in some order (no cycle); and
// the tensor to correct is produced by exactly one step and read by at
// least one. The graph is nil when there is a problem.
func New(cfg *tritonpb.ModelConfig, correct string) (*Graph, []Problem) {
	g := &Graph{
		ensemble:  cfg.GetName(),
		producer:  make(map[string]int),
		consumers: make(map[string][]int),
		correct:   correct,
	}
	var problems []Problem
	add := func(key, format string, args ...any) {
		problems = append(problems, Problem{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	for _, in := range cfg.GetInput() {
		g.inputs = append(g.inputs, in.GetName())
	}
	for _, out := range cfg.GetOutput() {
		g.outputs = append(g.outputs, out.GetName())
	}
	steps := cfg.GetEnsembleScheduling().GetStep()
	if len(steps) == 0 {
		add("name", "ensemble %q has no steps", g.ensemble)
		return nil, problems
	}
	producers := make(map[string][]int) // every producer of each tensor
	for i, s := range steps {
		st := Step{Model: s.GetModelName(), In: bindings(s.GetInputMap()), Out: bindings(s.GetOutputMap())}
		if v := s.GetModelVersion(); v > 0 {
			st.Version = strconv.FormatInt(v, 10)
		}
		g.steps = append(g.steps, st)
		if st.Model == "" {
			add("name", "ensemble %q steps[%d] names no model", g.ensemble, i)
		}
		for _, b := range st.Out {
			producers[b.Tensor] = append(producers[b.Tensor], i)
		}
		for _, b := range st.In {
			if c := g.consumers[b.Tensor]; len(c) == 0 || c[len(c)-1] != i {
				g.consumers[b.Tensor] = append(c, i)
			}
		}
	}
	for _, t := range sortedKeys(producers) {
		ps := producers[t]
		g.producer[t] = ps[0]
		switch {
		case slices.Contains(g.inputs, t):
			add("name", "ensemble %q: tensor %q is an input of the ensemble and also produced by %s", g.ensemble, t, g.Describe(ps[0]))
		case len(ps) > 1 && t != correct:
			add("name", "ensemble %q: tensor %q is produced by %d steps (%s)", g.ensemble, t, len(ps), g.describeAll(ps))
		}
	}
	for i, s := range g.steps {
		for _, b := range s.In {
			if _, ok := g.producer[b.Tensor]; !ok && !slices.Contains(g.inputs, b.Tensor) {
				add("name", "ensemble %q %s: input %q reads tensor %q, which is neither an input of the ensemble nor produced by a step",
					g.ensemble, g.Describe(i), b.Name, b.Tensor)
			}
		}
	}
	for _, t := range g.outputs {
		if _, ok := g.producer[t]; !ok {
			add("name", "ensemble %q: output %q is produced by no step", g.ensemble, t)
		}
	}
	if cycle := g.unordered(); len(cycle) > 0 {
		add("name", "ensemble %q: steps %s wait for each other's outputs: no order runs them", g.ensemble, g.describeAll(cycle))
	}
	g.checkCorrect(producers[correct], add)
	if len(problems) > 0 {
		return nil, problems
	}
	return g, nil
}

// checkCorrect checks the tensor to correct, given its producers.
func (g *Graph) checkCorrect(producers []int, add func(key, format string, args ...any)) {
	t := g.correct
	switch {
	case slices.Contains(g.inputs, t):
		add("correct", "tensor %q is an input of ensemble %q, which no step produces: correct a step's output (tensors steps produce: %s)",
			t, g.ensemble, strings.Join(g.produced(), ", "))
		return
	case len(producers) == 0:
		add("correct", "ensemble %q has no tensor %q (tensors steps produce: %s)", g.ensemble, t, strings.Join(g.produced(), ", "))
		return
	case len(producers) > 1:
		add("correct", "tensor %q of ensemble %q is produced by %d steps (%s): correct the output of exactly one",
			t, g.ensemble, len(producers), g.describeAll(producers))
	}
	if len(g.consumers[t]) == 0 {
		add("correct", "tensor %q of ensemble %q is read by no step (it is produced by %s): correct a tensor a later step reads, such as a head's input",
			t, g.ensemble, g.Describe(producers[0]))
	}
}

// unordered returns the steps that no dependency order reaches: those on
// or after a cycle. It runs Kahn's algorithm over the producers.
func (g *Graph) unordered() []int {
	pending := make([]int, len(g.steps))
	for i := range g.steps {
		pending[i] = len(g.dependencies(i))
	}
	var ready []int
	for i, n := range pending {
		if n == 0 {
			ready = append(ready, i)
		}
	}
	done := make([]bool, len(g.steps))
	for len(ready) > 0 {
		i := ready[0]
		ready = ready[1:]
		done[i] = true
		for _, b := range g.steps[i].Out {
			for _, c := range g.consumers[b.Tensor] {
				if pending[c]--; pending[c] == 0 {
					ready = append(ready, c)
				}
			}
		}
	}
	var left []int
	for i, d := range done {
		if !d {
			left = append(left, i)
		}
	}
	return left
}

// dependencies returns the tensors step i reads that steps produce, each
// once.
func (g *Graph) dependencies(i int) []string {
	var out []string
	for _, b := range g.steps[i].In {
		if _, ok := g.producer[b.Tensor]; ok && !slices.Contains(out, b.Tensor) {
			out = append(out, b.Tensor)
		}
	}
	return out
}

// Needed returns the steps that must run to produce the tensors wanted:
// their producers, and the producers of what those read, and so on.
func (g *Graph) Needed(wanted []string) []bool {
	need := make([]bool, len(g.steps))
	queue := slices.Clone(wanted)
	for len(queue) > 0 {
		t := queue[0]
		queue = queue[1:]
		i, ok := g.producer[t]
		if !ok || need[i] {
			continue
		}
		need[i] = true
		for _, b := range g.steps[i].In {
			queue = append(queue, b.Tensor)
		}
	}
	return need
}

// produced lists the tensors steps produce, sorted.
func (g *Graph) produced() []string {
	return sortedKeys(g.producer)
}

// describeAll names several steps.
func (g *Graph) describeAll(steps []int) string {
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = g.Describe(s)
	}
	return strings.Join(out, ", ")
}

// bindings returns a step's input_map or output_map, ordered by the step
// model's tensor name.
func bindings(m map[string]string) []Binding {
	out := make([]Binding, 0, len(m))
	for _, k := range sortedKeys(m) {
		out = append(out, Binding{Name: k, Tensor: m[k]})
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
