package pipeline

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/sidecar/pipeline/graphform"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// inferGraph serves a request for a model of the graph form, whose
// preference is resolved. A request that gets no correction goes to the
// ensemble itself, so that its answer is Triton's, byte for byte; one
// that gets a correction runs the ensemble's steps (graphform.Form.Run),
// W_p applied to the graph's tensor as soon as its step has produced it,
// each step a call to Triton.
func (m *Model) inferGraph(ctx context.Context, up *Upstream, in *tritonpb.ModelInferRequest, params map[string]*tritonpb.InferParameter, res *Result) error {
	if !res.Choice.Corrects() {
		return m.forward(ctx, up, in, params, res)
	}
	rows, err := m.checkInputs(in)
	if err != nil {
		return status.Errorf(codes.InvalidArgument, "model %q: %v", m.name, err)
	}
	wanted, err := m.graph.Outputs(in.GetOutputs())
	if err != nil {
		return status.Errorf(codes.InvalidArgument, "model %q: %v", m.name, err)
	}
	res.Rows = rows
	start := time.Now()
	w, err := m.profile.Matrix(ctx, res.Choice)
	if err != nil {
		return m.matrixError(ctx, res.Choice, err)
	}
	solved := time.Since(start)
	resp, t, err := m.graph.Run(ctx, graphform.Request{
		Proto:      in,
		Parameters: params,
		Outputs:    wanted,
		W:          w,
		Call: func(ctx context.Context, step int, req *tritonpb.ModelInferRequest) (*tritonpb.ModelInferResponse, error) {
			ctx, cancel := up.callCtx(ctx)
			defer cancel()
			resp, err := up.RPC.ModelInfer(ctx, req)
			r := ref{model: req.GetModelName(), version: req.GetModelVersion()}
			if err != nil {
				return nil, m.upstreamError(up, fmt.Sprintf("ensemble step %d", step), r, err)
			}
			if step == m.producerStep {
				if err := m.checkAnswerVersion(fmt.Sprintf("ensemble step %d", step), r, resp.GetModelVersion()); err != nil {
					return nil, err
				}
			}
			return resp, nil
		},
	})
	if err != nil {
		return err
	}
	setChoice(resp.Parameters, res.Choice)
	res.Response = resp
	res.Timing = Timing{Backbone: t.Before, Correction: solved + t.Correction, Heads: t.After}
	return nil
}

// forward sends a request that gets no correction to the ensemble itself,
// with the client's inputs, requested outputs and id, its parameters less
// ReACT's own, and returns Triton's answer with the applied preference
// (none) and the arm added. Triton's errors reach the client as Triton
// gave them.
func (m *Model) forward(ctx context.Context, up *Upstream, in *tritonpb.ModelInferRequest, params map[string]*tritonpb.InferParameter, res *Result) error {
	req := &tritonpb.ModelInferRequest{
		ModelName:        m.ensemble,
		ModelVersion:     in.GetModelVersion(),
		Id:               in.GetId(),
		Parameters:       params,
		Inputs:           in.GetInputs(),
		Outputs:          in.GetOutputs(),
		RawInputContents: in.GetRawInputContents(),
	}
	ctx, cancel := up.callCtx(ctx)
	defer cancel()
	start := time.Now()
	resp, err := up.RPC.ModelInfer(ctx, req)
	if err != nil {
		if st := status.Convert(err); st.Code() == codes.Unavailable {
			return status.Errorf(codes.Unavailable, "model %q: upstream Triton %s: %s", m.name, up.Addr, st.Message())
		}
		return err
	}
	if resp.Parameters == nil {
		resp.Parameters = make(map[string]*tritonpb.InferParameter, 2)
	}
	setChoice(resp.Parameters, res.Choice)
	res.Response = resp
	res.Rows = 1
	if m.batching && len(in.GetInputs()) > 0 && len(in.GetInputs()[0].GetShape()) > 0 {
		res.Rows = int(in.GetInputs()[0].GetShape()[0])
	}
	res.Timing.Heads = time.Since(start)
	return nil
}

// setChoice records the applied preference, and the arm when there is
// one, in a response's parameters.
func setChoice(params map[string]*tritonpb.InferParameter, c control.Choice) {
	params[control.KeyPreference] = &tritonpb.InferParameter{ParameterChoice: &tritonpb.InferParameter_StringParam{StringParam: c.Canonical()}}
	if c.Arm != "" {
		params[control.KeyArm] = &tritonpb.InferParameter{ParameterChoice: &tritonpb.InferParameter_StringParam{StringParam: c.Arm}}
	}
}
