package feedback

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/mergectl/react-triton/triton/tritonpb"
)

func TestJoinProto(t *testing.T) {
	w, _ := newTestWindow(t, Options{})
	for _, id := range []string{"1", "2"} {
		if err := w.Record(id, served("B")); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		req  *tritonpb.ModelFeedbackRequest
		want *tritonpb.ModelFeedbackResponse
		code codes.Code
		msg  string
	}{
		{"no outcome", &tritonpb.ModelFeedbackRequest{ModelName: "m", Id: "1"}, nil, codes.InvalidArgument, "want a label or a reward"},
		{"no model, no id, bad reward", &tritonpb.ModelFeedbackRequest{Outcome: &tritonpb.ModelFeedbackRequest_Reward{Reward: 7}}, nil, codes.InvalidArgument,
			"3 problems:\n  model_name: missing\n  id: missing: the id of the request the outcome is about\n  reward: want a number in [0, 1], got 7"},
		{"label 0 of the wrong output", &tritonpb.ModelFeedbackRequest{ModelName: "m", Id: "1", Output: "x", Outcome: &tritonpb.ModelFeedbackRequest_Label{Label: 0}}, nil, codes.InvalidArgument, `output: "x" has no prediction`},
		{"label", &tritonpb.ModelFeedbackRequest{ModelName: "m", Id: "1", Outcome: &tritonpb.ModelFeedbackRequest_Label{Label: 3}},
			&tritonpb.ModelFeedbackResponse{ModelName: "m", Id: "1", Experiment: "ab", Arm: "B", Kind: "label", Task: "fashion", Score: 1}, codes.OK, ""},
		{"again", &tritonpb.ModelFeedbackRequest{ModelName: "m", Id: "1", Outcome: &tritonpb.ModelFeedbackRequest_Label{Label: 3}}, nil, codes.AlreadyExists, "took its feedback already"},
		{"reward 0", &tritonpb.ModelFeedbackRequest{ModelName: "m", Id: "2", Outcome: &tritonpb.ModelFeedbackRequest_Reward{Reward: 0}},
			&tritonpb.ModelFeedbackResponse{ModelName: "m", Id: "2", Experiment: "ab", Arm: "B", Kind: "reward"}, codes.OK, ""},
		{"unknown", &tritonpb.ModelFeedbackRequest{ModelName: "m", Id: "3", Outcome: &tritonpb.ModelFeedbackRequest_Reward{Reward: 0}}, nil, codes.NotFound, `no request with id "3"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := w.JoinProto(tc.req)
			// What a gRPC handler returning err sends.
			s := status.Convert(err)
			if s.Code() != tc.code || !strings.Contains(s.Message(), tc.msg) {
				t.Errorf("status %v, want %v with %q", s, tc.code, tc.msg)
			}
			if !proto.Equal(got, tc.want) {
				t.Errorf("response %v, want %v", got, tc.want)
			}
			if err != nil && !errors.Is(err, ErrInvalid) && tc.code == codes.InvalidArgument {
				t.Errorf("%v is not ErrInvalid", err)
			}
		})
	}
}
