package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/experiment/feedback"
	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/internal/sidecartest"
	"github.com/mergectl/react-triton/sidecar/outcomes"
	"github.com/mergectl/react-triton/sidecar/server"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// TestFeedbackBesideThePassThrough: with the react.Feedback service
// registered and the feedback route in front of the seams, their calls
// pass the front door's checks (the metadata's and headers' size) and are
// answered by the sidecar, never by Triton; calls of any other service,
// and other HTTP routes, still reach Triton.
func TestFeedbackBesideThePassThrough(t *testing.T) {
	w, err := feedback.NewWindow(feedback.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"42", "43"} {
		if err := w.Record(id, feedback.Served{Model: "m", Experiment: "e", Arm: "a"}); err != nil {
			t.Fatal(err)
		}
	}
	fb := outcomes.New(w, nil)
	s, u := sidecartest.StartRecorded(t, server.Config{
		Server:       serverConfig(func(c *config.Server) { c.MaxHeaderBytes = 2 * config.KiB }),
		RegisterGRPC: fb.RegisterGRPC, InterceptHTTP: fb.HTTPInterceptor(nil),
	})
	conn := sidecartest.Dial(t, s.GRPCAddr().String())
	fc := tritonpb.NewFeedbackClient(conn)
	reward := func(ctx context.Context, id string) (*tritonpb.ModelFeedbackResponse, error) {
		return fc.ModelFeedback(ctx, &tritonpb.ModelFeedbackRequest{ModelName: "m", Id: id, Outcome: &tritonpb.ModelFeedbackRequest_Reward{Reward: 0.25}})
	}
	resp, err := reward(context.Background(), "42")
	if err != nil || resp.GetArm() != "a" || resp.GetExperiment() != "e" || resp.GetScore() != 0.25 || resp.GetKind() != "reward" {
		t.Errorf("react.Feedback for a recorded request: %v, %v", resp, err)
	}
	if _, err := reward(context.Background(), "42"); status.Code(err) != codes.AlreadyExists {
		t.Errorf("the same outcome again: %v, want ALREADY_EXISTS", err)
	}
	if _, err := reward(context.Background(), "41"); status.Code(err) != codes.NotFound {
		t.Errorf("an unknown id: %v, want NOT_FOUND", err)
	}
	large := metadata.AppendToOutgoingContext(context.Background(), "cookie", strings.Repeat("c", 2100))
	if _, err := reward(large, "43"); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "server.max_header_bytes") {
		t.Errorf("react.Feedback with 2.1 KB of metadata: %v, want INVALID_ARGUMENT", err)
	}
	if g, _ := u.Calls(); g != 0 {
		t.Fatalf("%d react.Feedback calls reached Triton", g)
	}
	if err := sidecartest.InvokeRaw(context.Background(), conn, "/x.Unknown/Echo"); err != nil {
		t.Errorf("another service: %v", err)
	}
	if g, _ := u.Calls(); g != 1 {
		t.Errorf("%d calls of another service reached Triton, want 1", g)
	}

	base := "http://" + s.HTTPAddr().String()
	r, body := sidecartest.HTTPDo(t, http.MethodPost, base+"/v2/models/m/feedback", []byte(`{"id": "43", "reward": 1}`), nil)
	if r.StatusCode != http.StatusOK || !strings.Contains(string(body), `"arm":"a"`) {
		t.Errorf("POST /v2/models/m/feedback: %d %s", r.StatusCode, body)
	}
	r, body = sidecartest.HTTPDo(t, http.MethodPost, base+"/v2/models/m/feedback", []byte(`{"id": "43", "reward": 1}`),
		map[string]string{"Cookie": strings.Repeat("c", 2100)})
	if r.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("the feedback route with 2.1 KB of cookie: %d %s, want 431", r.StatusCode, body)
	}
	if _, h := u.Calls(); h != 0 {
		t.Fatalf("%d feedback requests reached Triton", h)
	}
	if r, body := sidecartest.HTTPDo(t, http.MethodPost, base+"/v2/models/m/generate", nil, nil); r.StatusCode != http.StatusOK || string(body) != "upstream" {
		t.Errorf("another route: %d %s", r.StatusCode, body)
	}
	if _, h := u.Calls(); h != 1 {
		t.Errorf("%d requests of another route reached Triton, want 1", h)
	}
}
