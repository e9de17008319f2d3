package feedback

import (
	"errors"

	"github.com/mergectl/react-triton/problem"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// JoinRequest parses the JSON body of POST /v2/models/{model}/feedback
// (ParseRequest) and joins it (Join). A body that does not parse is
// counted as invalid. The answer for HTTPStatus(err) == 200 is
// j.Response() as JSON.
func (w *Window) JoinRequest(model string, body []byte) (Joined, error) {
	f, err := ParseRequest(body)
	if err != nil {
		return Joined{}, w.reject(model, f.ID, Invalid, err)
	}
	return w.Join(model, f)
}

// JoinProto joins the outcome of a react.Feedback/ModelFeedback call. Its
// error is an *Error, which a gRPC handler returns as it is (its
// GRPCStatus carries GRPCCode's code).
func (w *Window) JoinProto(req *tritonpb.ModelFeedbackRequest) (*tritonpb.ModelFeedbackResponse, error) {
	f, err := FromProto(req)
	if err != nil {
		return nil, w.reject(req.GetModelName(), f.ID, Invalid, err)
	}
	j, err := w.Join(req.GetModelName(), f)
	if err != nil {
		return nil, err
	}
	return j.Proto(), nil
}

// FromProto reads a ModelFeedbackRequest, with the problems of a request
// that names no model or no outcome (Validate checks the rest).
func FromProto(req *tritonpb.ModelFeedbackRequest) (Feedback, error) {
	f := Feedback{ID: req.GetId(), Output: req.GetOutput()}
	var p problem.List
	if req.GetModelName() == "" {
		p.Add("model_name", "missing")
	}
	switch o := req.GetOutcome().(type) {
	case *tritonpb.ModelFeedbackRequest_Label:
		f.Kind, f.Class = Label, o.Label
	case *tritonpb.ModelFeedbackRequest_Reward:
		f.Kind, f.Value = Reward, o.Reward
	}
	if l, ok := errors.AsType[problem.List](f.Validate()); ok {
		p = append(p, l...)
	}
	return f, p.Err()
}

// Proto returns the answer of a react.Feedback/ModelFeedback call.
func (j Joined) Proto() *tritonpb.ModelFeedbackResponse {
	return &tritonpb.ModelFeedbackResponse{
		ModelName: j.Model, Id: j.ID, Experiment: j.Experiment, Arm: j.Arm,
		Kind: j.Kind.String(), Task: j.Task, Score: j.Score,
	}
}
