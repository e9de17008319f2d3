package pipeline

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mergectl/react-triton/triton/tritonpb"
)

// graph is the step graph of a Triton ensemble, as its configuration's
// ensemble_scheduling declares it, with the tensor W_p corrects.
type graph struct {
	ensemble string
	steps    []step
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

// step is one step of an ensemble: a model, and how its tensors are wired
// to the ensemble's.
type step struct {
	ref
	// in and out map the step model's tensors to the ensemble's, ordered
	// by the model's tensor name.
	in, out []binding
}

// binding wires one tensor of a step model to one of the ensemble.
type binding struct {
	name   string // the step model's tensor name
	tensor string // the ensemble's tensor name
}

// graphProblem is one reason an ensemble's graph cannot be served with
// its tensor corrected. key is the configuration key it concerns: "name"
// for the ensemble itself, "correct" for the tensor.
type graphProblem struct {
	key, msg string
}

// describe names step i in messages: `steps[1] (model "head_a")`.
func (g *graph) describe(i int) string {
	return fmt.Sprintf("steps[%d] (model %q)", i, g.steps[i].model)
}

// newGraph reads the step graph of an ensemble's configuration and checks
// it, and the tensor to correct, reporting every problem at once: every
// step names a model; every tensor a step reads is an input of the
// ensemble or the output of exactly one step; every output of the ensemble
// is produced by a step; the steps can run in some order (no cycle); and
// the tensor to correct is produced by exactly one step and read by at
// least one. The graph is nil when there is a problem.
func newGraph(cfg *tritonpb.ModelConfig, correct string) (*graph, []graphProblem) {
	g := &graph{
		ensemble:  cfg.GetName(),
		producer:  make(map[string]int),
		consumers: make(map[string][]int),
		correct:   correct,
	}
	var problems []graphProblem
	add := func(key, format string, args ...any) {
		problems = append(problems, graphProblem{key: key, msg: fmt.Sprintf(format, args...)})
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
		st := step{ref: ref{model: s.GetModelName()}, in: bindings(s.GetInputMap()), out: bindings(s.GetOutputMap())}
		if v := s.GetModelVersion(); v > 0 {
			st.version = strconv.FormatInt(v, 10)
		}
		g.steps = append(g.steps, st)
		if st.model == "" {
			add("name", "ensemble %q steps[%d] names no model", g.ensemble, i)
		}
		for _, b := range st.out {
			producers[b.tensor] = append(producers[b.tensor], i)
		}
		for _, b := range st.in {
			if c := g.consumers[b.tensor]; len(c) == 0 || c[len(c)-1] != i {
				g.consumers[b.tensor] = append(c, i)
			}
		}
	}
	for _, t := range sortedKeys(producers) {
		ps := producers[t]
		g.producer[t] = ps[0]
		switch {
		case slices.Contains(g.inputs, t):
			add("name", "ensemble %q: tensor %q is an input of the ensemble and also produced by %s", g.ensemble, t, g.describe(ps[0]))
		case len(ps) > 1 && t != correct:
			add("name", "ensemble %q: tensor %q is produced by %d steps (%s)", g.ensemble, t, len(ps), g.describeAll(ps))
		}
	}
	for i, s := range g.steps {
		for _, b := range s.in {
			if _, ok := g.producer[b.tensor]; !ok && !slices.Contains(g.inputs, b.tensor) {
				add("name", "ensemble %q %s: input %q reads tensor %q, which is neither an input of the ensemble nor produced by a step",
					g.ensemble, g.describe(i), b.name, b.tensor)
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
func (g *graph) checkCorrect(producers []int, add func(key, format string, args ...any)) {
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
			t, g.ensemble, g.describe(producers[0]))
	}
}

// unordered returns the steps that no dependency order reaches: those on
// or after a cycle. It runs Kahn's algorithm over the producers.
func (g *graph) unordered() []int {
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
		for _, b := range g.steps[i].out {
			for _, c := range g.consumers[b.tensor] {
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
func (g *graph) dependencies(i int) []string {
	var out []string
	for _, b := range g.steps[i].in {
		if _, ok := g.producer[b.tensor]; ok && !slices.Contains(out, b.tensor) {
			out = append(out, b.tensor)
		}
	}
	return out
}

// needed returns the steps that must run to produce the tensors wanted:
// their producers, and the producers of what those read, and so on.
func (g *graph) needed(wanted []string) []bool {
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
		for _, b := range g.steps[i].in {
			queue = append(queue, b.tensor)
		}
	}
	return need
}

// produced lists the tensors steps produce, sorted.
func (g *graph) produced() []string {
	return sortedKeys(g.producer)
}

// describeAll names several steps.
func (g *graph) describeAll(steps []int) string {
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = g.describe(s)
	}
	return strings.Join(out, ", ")
}

// bindings returns a step's input_map or output_map, ordered by the step
// model's tensor name.
func bindings(m map[string]string) []binding {
	out := make([]binding, 0, len(m))
	for _, k := range sortedKeys(m) {
		out = append(out, binding{name: k, tensor: m[k]})
	}
	return out
}
