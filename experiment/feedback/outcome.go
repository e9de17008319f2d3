package feedback

import (
	"time"

	"github.com/mergectl/react-triton/problem"
)

// Kind is what a feedback reports.
type Kind int

// The kinds of feedback.
const (
	// Label is the true class of one output of the request, compared with
	// the class the output predicted.
	Label Kind = iota + 1
	// Reward is a number in [0, 1] for the whole request.
	Reward
)

// String returns "label" or "reward", the value of the metrics' kind
// label.
func (k Kind) String() string {
	switch k {
	case Label:
		return "label"
	case Reward:
		return "reward"
	}
	return "none"
}

// Feedback is the outcome of one request, reported after it was served.
type Feedback struct {
	// ID is the request's id, as recorded.
	ID string
	// Kind says which of Label and Reward holds the outcome.
	Kind Kind
	// Class is a Label's true class index.
	Class int64
	// Output names the output a Label is the true class of; "" for the
	// request's only output with a prediction.
	Output string
	// Value is a Reward's value, in [0, 1].
	Value float64
}

// Validate reports every problem of f that does not depend on the request
// it is about, as a problem.List with the JSON body's paths (id, label,
// reward, output).
func (f Feedback) Validate() error {
	var p problem.List
	if f.ID == "" {
		p.Add("id", "missing: the id of the request the outcome is about")
	}
	switch f.Kind {
	case Label:
		if f.Class < 0 {
			p.Add("label", "a class index is ≥ 0, got %d", f.Class)
		}
	case Reward:
		if !(f.Value >= 0 && f.Value <= 1) {
			p.Add("reward", "want a number in [0, 1], got %v", f.Value)
		}
		if f.Output != "" {
			p.Add("output", "names the output of a label; a reward is for the whole request")
		}
	default:
		p.Add("", "want a label or a reward")
	}
	return p.Err()
}

// score is the outcome counted: 1 or 0 for a label the prediction matched
// or missed, the reward for a reward.
func score(match bool) float64 {
	if match {
		return 1
	}
	return 0
}

// NoClass is a Prediction's Class when the output's prediction is not
// known: an output that is not logits, or a request of several rows.
const NoClass = -1

// Prediction is what one output of a served request predicted.
type Prediction struct {
	// Output is the output's name.
	Output string
	// Task is the head's task, "" when the model has no tasks (the
	// output's name then stands for it in the metrics).
	Task string
	// Class is the predicted (top-1) class index of the request's one
	// row, or NoClass.
	Class int
	// Classes is the number of classes (the logits' length), 0 when not
	// known; a label must be below it.
	Classes int
}

// Served is what the sidecar records of a request it served with an
// experiment's arm. Its names come from the sidecar's configuration
// (bounded sets): they label the metrics.
type Served struct {
	Model, Experiment, Arm string
	// Preference is the arm's preference as served (canonical form), or a
	// preset's name.
	Preference string
	// Predictions has one entry per output with a known prediction, in
	// any order; nil when none is known (a label then cannot be judged,
	// a reward can).
	Predictions []Prediction
}

// Joined is a feedback joined to the request it is about.
type Joined struct {
	// Model and ID name the request.
	Model, ID string
	// Experiment, Arm and Preference are those that served it.
	Experiment, Arm, Preference string
	// Served is when the request was recorded.
	Served time.Time
	// Kind is the feedback's kind.
	Kind Kind
	// Output and Task are the output a label was compared on and its task
	// (the output's name where it has none); "" for a reward.
	Output, Task string
	// Class and Predicted are a label's true and predicted class.
	Class, Predicted int
	// Score is the outcome counted: 1 or 0 for a label the prediction
	// matched or missed, the reward for a reward.
	Score float64
}

// Response is the JSON answer to a joined feedback (the fields of
// react.ModelFeedbackResponse).
type Response struct {
	Model      string  `json:"model_name"`
	ID         string  `json:"id"`
	Experiment string  `json:"experiment"`
	Arm        string  `json:"arm"`
	Kind       string  `json:"kind"`
	Task       string  `json:"task,omitempty"`
	Score      float64 `json:"score"`
}

// Response returns the JSON answer of the HTTP endpoint.
func (j Joined) Response() Response {
	return Response{Model: j.Model, ID: j.ID, Experiment: j.Experiment, Arm: j.Arm, Kind: j.Kind.String(), Task: j.Task, Score: j.Score}
}
