// Package feedback joins the outcomes of requests served in an A/B
// experiment to the arm that served them, and counts them per arm for the
// statistics that decide the experiment (package experiment/sequential).
//
// When the sidecar serves a request with an experiment's arm it records
// it in a Window under the model's name and the request's id (Record):
// the experiment, the arm, the preference and, per output, the top-1
// class it predicted. Later the client reports what happened (Join): the
// true class of an output, or a reward in [0, 1]. The outcome is joined
// to the recorded request exactly once, and counted for its model,
// experiment and arm as a score: 1 or 0 for a label the prediction
// matched or missed, the reward itself for a reward. The counters hold,
// per arm, the number of outcomes, the sum of the scores and the sum of
// their squares: all that sequential.Sample needs.
//
// The window is bounded in entries and in age (Options): an id stays
// joinable for MaxAge and for the next MaxEntries requests recorded,
// whichever ends first, and every operation does O(1) work under one
// mutex. Ids are held as 128-bit keyed hashes of the model and the id, so
// an entry's memory does not depend on what the client sends. The window
// also remembers the last Remembered ids that left it, answered or not,
// so that a second feedback for the same request is told apart
// (ErrDuplicate) from one that came too late (ErrExpired) or for a
// request never recorded (ErrUnknownID).
//
// The transports take the outcome as the JSON body of
// POST /v2/models/{model}/feedback (ParseRequest, JoinRequest) or as the
// gRPC method react.Feedback/ModelFeedback (JoinProto; the messages are
// in triton/tritonpb). HTTPStatus and GRPCCode map every error to its
// status in one place. The Window is a prometheus.Collector of the
// react_experiment_ metrics named by the Metric constants.
package feedback
