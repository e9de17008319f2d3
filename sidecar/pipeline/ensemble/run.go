package ensemble

import (
	"context"
	"fmt"

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

// Run is one request's run of a graph's steps.
type Run struct {
	Graph *Graph
	// ID and Parameters are the request's, given to every step, as
	// Triton's ensembles give them.
	ID         string
	Parameters map[string]*tritonpb.InferParameter
	// Inputs are the request's inputs, by the ensemble's names. An
	// optional input of the ensemble may be missing.
	Inputs map[string]Tensor
	// Outputs are the outputs asked for.
	Outputs []Output
	// Call sends step's request to its model. An error ends the run, and
	// is Do's.
	Call func(ctx context.Context, step int, req *tritonpb.ModelInferRequest) (*tritonpb.ModelInferResponse, error)
	// Correct, when not nil, replaces the graph's tensor to correct as
	// soon as its step has produced it, before the steps that read it are
	// called. An error ends the run, and is Do's.
	Correct func(step int, t Tensor) (Tensor, error)
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
// whose data do not fit its shape, is an error that names the step.
func (r *Run) Do(ctx context.Context) (map[string]Tensor, error) {
	g := r.Graph
	names := make([]string, len(r.Outputs))
	for i, o := range r.Outputs {
		names[i] = o.Name
	}
	need := g.Needed(names)
	pending := make([]int, len(g.steps))
	for i := range g.steps {
		if need[i] {
			pending[i] = len(g.dependencies(i))
		}
	}
	tensors := make(map[string]Tensor, len(r.Inputs)+len(g.producer))
	for k, t := range r.Inputs {
		tensors[k] = t
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make(chan result, len(g.steps))
	running := 0
	launch := func(i int) {
		req := r.request(i, need, tensors)
		running++
		go func() {
			resp, err := r.Call(ctx, i, req)
			results <- result{step: i, resp: resp, err: err}
		}()
	}
	for i := range g.steps {
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
		for _, b := range g.steps[res.step].Out {
			for _, c := range g.consumers[b.Tensor] {
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

// request is the request of step i: the tensors it reads under its own
// input names (an input of the ensemble the request left out is left
// out), the request's id and parameters, and the outputs the run needs,
// with the parameters of those asked for.
func (r *Run) request(i int, need []bool, tensors map[string]Tensor) *tritonpb.ModelInferRequest {
	g := r.Graph
	s := g.steps[i]
	req := &tritonpb.ModelInferRequest{ModelName: s.Model, ModelVersion: s.Version, Id: r.ID, Parameters: r.Parameters}
	for _, b := range s.In {
		t, ok := tensors[b.Tensor]
		if !ok {
			continue
		}
		req.Inputs = append(req.Inputs, &tritonpb.ModelInferRequest_InferInputTensor{Name: b.Name, Datatype: t.Datatype, Shape: t.Shape, Parameters: t.Params})
		req.RawInputContents = append(req.RawInputContents, t.Raw)
	}
	for _, b := range s.Out {
		if used, params := r.used(b.Tensor, need); used {
			req.Outputs = append(req.Outputs, &tritonpb.ModelInferRequest_InferRequestedOutputTensor{Name: b.Name, Parameters: params})
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
// the ensemble, the tensor to correct corrected.
func (r *Run) store(res result, need []bool, tensors map[string]Tensor) error {
	g := r.Graph
	resp, err := triton.DecodeInferResponse(res.resp)
	if err != nil {
		return fmt.Errorf("ensemble %s: %v", g.Describe(res.step), err)
	}
	for _, b := range g.steps[res.step].Out {
		if used, _ := r.used(b.Tensor, need); !used {
			continue
		}
		t, ok := resp.Output(b.Name)
		if !ok {
			return fmt.Errorf("ensemble %s: the answer has no output %q", g.Describe(res.step), b.Name)
		}
		x := Tensor{Datatype: t.Datatype, Shape: t.Shape, Raw: t.Raw}
		if b.Tensor == g.correct && r.Correct != nil {
			if x, err = r.Correct(res.step, x); err != nil {
				return err
			}
		}
		tensors[b.Tensor] = x
	}
	return nil
}
