package ensemble

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// Tensor is one tensor of a run: a request's input or a step's output,
// its data raw (as raw_input_contents carry it).
type Tensor struct {
	Datatype string
	Shape    []int64
	Raw      []byte
	// Params are a request input's parameters, given on to the steps that
	// read it.
	Params map[string]*tritonpb.InferParameter
}

// Output is an output of the ensemble a request asks for, with the
// parameters (classification) the step that produces it is asked it with.
type Output struct {
	Name   string
	Params map[string]*tritonpb.InferParameter
}

// Run is one request's run of an ensemble's steps by a client of Triton,
// as Triton's ensemble scheduler would run them, with a hook on one
// tensor.
type Run struct {
	Graph *Graph
	// ID and Parameters are the request's, given to every step, as
	// Triton's ensembles give them.
	ID         string
	Parameters map[string]*tritonpb.InferParameter
	// Inputs are the request's inputs, by the ensemble's names. An
	// optional input of the ensemble may be missing: the steps' requests
	// leave it out.
	Inputs map[string]Tensor
	// Outputs are the outputs asked for.
	Outputs []Output
	// Call sends step's request to its model. An error ends the run, and
	// is Do's.
	Call func(ctx context.Context, step int, req *tritonpb.ModelInferRequest) (*tritonpb.ModelInferResponse, error)
	// Tensor and Hook, when Hook is not nil: Hook replaces the tensor as
	// soon as its step has produced it, before the steps that read it are
	// called (the sidecar corrects it there). An error ends the run, and
	// is Do's.
	Tensor string
	Hook   func(step int, t Tensor) (Tensor, error)
}

// result is a step's answer.
type result struct {
	step int
	resp *tritonpb.ModelInferResponse
	err  error
}

// Do runs the steps that produce the outputs asked for (and only those),
// each as soon as the tensors it reads are ready, so that steps that do
// not depend on each other are in flight at the same time. It returns
// every tensor of the run by its name in the ensemble, the outputs asked
// for among them. The first step that fails stops the run: the calls in
// flight are cancelled, and Do returns when they have ended, with the
// failure's error. A step's answer that lacks an output the run needs, or
// whose data do not fit its shape, is an error that names the step. The
// graph must have an order (Graph.Order).
func (r *Run) Do(ctx context.Context) (map[string]Tensor, error) {
	g := r.Graph
	names := make([]string, len(r.Outputs))
	for i, o := range r.Outputs {
		names[i] = o.Name
	}
	need := g.Needed(names)
	pending := make([]int, len(g.Steps))
	for i := range g.Steps {
		if need[i] {
			pending[i] = len(g.dependencies(i))
		}
	}
	tensors := make(map[string]Tensor, len(r.Inputs)+len(g.producers))
	for k, t := range r.Inputs {
		tensors[k] = t
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make(chan result, len(g.Steps))
	running := 0
	launch := func(i int) {
		req := r.request(i, need, tensors)
		running++
		go func() {
			resp, err := r.Call(ctx, i, req)
			results <- result{step: i, resp: resp, err: err}
		}()
	}
	for i := range g.Steps {
		if need[i] && pending[i] == 0 {
			launch(i)
		}
	}
	var first error
	for running > 0 {
		res := <-results
		running--
		if first != nil {
			continue
		}
		if res.err == nil {
			res.err = r.store(res, need, tensors)
		}
		if res.err != nil {
			first = res.err
			cancel()
			continue
		}
		for _, t := range sortedValues(g.Steps[res.step].GetOutputMap()) {
			for _, c := range g.consumers[t] {
				if need[c] {
					if pending[c]--; pending[c] == 0 {
						launch(c)
					}
				}
			}
		}
	}
	if first != nil {
		return nil, first
	}
	return tensors, nil
}

// Needed returns the steps that must run to produce the tensors wanted:
// their producers, the producers of what those read, and so on.
func (g *Graph) Needed(wanted []string) []bool {
	need := make([]bool, len(g.Steps))
	queue := slices.Clone(wanted)
	for len(queue) > 0 {
		t := queue[0]
		queue = queue[1:]
		for _, i := range g.producers[t] {
			if need[i] {
				continue
			}
			need[i] = true
			queue = append(queue, sortedValues(g.Steps[i].GetInputMap())...)
		}
	}
	return need
}

// Describe names step i for messages: `step 1 ("vit")`.
func (g *Graph) Describe(i int) string { return g.describe([]int{i}) }

// dependencies returns the tensors step i reads that steps produce.
func (g *Graph) dependencies(i int) []string {
	var out []string
	for _, t := range sortedValues(g.Steps[i].GetInputMap()) {
		if len(g.producers[t]) > 0 {
			out = append(out, t)
		}
	}
	return out
}

// request is the request of step i: the tensors it reads under its own
// input names, in their order (an input of the ensemble the request left
// out is left out), the request's id and parameters, and the outputs the
// run needs, with the parameters of those asked for.
func (r *Run) request(i int, need []bool, tensors map[string]Tensor) *tritonpb.ModelInferRequest {
	s := r.Graph.Steps[i]
	req := &tritonpb.ModelInferRequest{ModelName: s.GetModelName(), Id: r.ID, Parameters: r.Parameters}
	if v := s.GetModelVersion(); v > 0 {
		req.ModelVersion = strconv.FormatInt(v, 10)
	}
	for _, name := range slices.Sorted(maps.Keys(s.GetInputMap())) {
		t, ok := tensors[s.GetInputMap()[name]]
		if !ok {
			continue
		}
		req.Inputs = append(req.Inputs, &tritonpb.ModelInferRequest_InferInputTensor{Name: name, Datatype: t.Datatype, Shape: t.Shape, Parameters: t.Params})
		req.RawInputContents = append(req.RawInputContents, t.Raw)
	}
	for _, name := range slices.Sorted(maps.Keys(s.GetOutputMap())) {
		if used, params := r.used(s.GetOutputMap()[name], need); used {
			req.Outputs = append(req.Outputs, &tritonpb.ModelInferRequest_InferRequestedOutputTensor{Name: name, Parameters: params})
		}
	}
	return req
}

// used reports whether the run needs a tensor (a needed step reads it, or
// it is asked for), and the parameters it is asked for with.
func (r *Run) used(tensor string, need []bool) (bool, map[string]*tritonpb.InferParameter) {
	for _, o := range r.Outputs {
		if o.Name == tensor {
			return true, o.Params
		}
	}
	for _, c := range r.Graph.consumers[tensor] {
		if need[c] {
			return true, nil
		}
	}
	return false, nil
}

// store keeps the outputs of a step's answer the run needs as tensors of
// the ensemble, the hooked tensor through the hook.
func (r *Run) store(res result, need []bool, tensors map[string]Tensor) error {
	g := r.Graph
	resp, err := triton.DecodeInferResponse(res.resp)
	if err != nil {
		return fmt.Errorf("ensemble %s: %v", g.Describe(res.step), err)
	}
	outputs := g.Steps[res.step].GetOutputMap()
	for _, name := range slices.Sorted(maps.Keys(outputs)) {
		tensor := outputs[name]
		if used, _ := r.used(tensor, need); !used {
			continue
		}
		t, ok := resp.Output(name)
		if !ok {
			return fmt.Errorf("ensemble %s: the answer has no output %q", g.Describe(res.step), name)
		}
		x := Tensor{Datatype: t.Datatype, Shape: t.Shape, Raw: t.Raw}
		if tensor == r.Tensor && r.Hook != nil {
			if x, err = r.Hook(res.step, x); err != nil {
				return err
			}
		}
		tensors[tensor] = x
	}
	return nil
}
