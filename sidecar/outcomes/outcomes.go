package outcomes

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/experiment/feedback"
	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/internal/restapi"
	"github.com/mergectl/react-triton/sidecar/passthrough"
	"github.com/mergectl/react-triton/sidecar/pipeline"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// KeyRequestID is the response parameter, HTTP response header and gRPC
// response header metadata key that carries the id the sidecar gave a
// request recorded for feedback that came without an id of its own. A
// request with its own id is answered as Triton answers it: the
// response's id field echoes it, and no react-request-id is added.
const KeyRequestID = "react-request-id"

// Action is the last element of the feedback route,
// POST /v2/models/{model}/feedback.
const Action = "feedback"

// disabledMessage is what the endpoints answer while feedback is off.
const disabledMessage = "sidecar: feedback is disabled (feedback.enabled: false in the sidecar's configuration)"

// Feedback is the sidecar's side of the join window: it records the
// requests served with an experiment's arm and serves the endpoints that
// take their outcomes. One serves the whole process, across reloads. A
// nil *Feedback, or one without a window, records nothing, assigns no id,
// and answers the endpoints HTTP 501 and gRPC UNIMPLEMENTED. It is safe
// for concurrent use.
type Feedback struct {
	w   *feedback.Window
	log *slog.Logger
	// newID draws the id of a request that came without one.
	newID func() string
}

// New returns the Feedback of window w; nil w turns feedback off. log
// receives what a client is not told (nil discards it).
func New(w *feedback.Window, log *slog.Logger) *Feedback {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Feedback{w: w, log: log, newID: randomID}
}

// Window returns the join window, nil when feedback is off.
func (f *Feedback) Window() *feedback.Window {
	if f == nil {
		return nil
	}
	return f.w
}

// randomID returns 128 random bits in hex: 32 characters.
func randomID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// Record records a request of model that was served with an experiment's
// arm, in res, under its id. A request without an id gets one, set as the
// react-request-id parameter of res.Response and returned; assigned is ""
// when the request kept its own id, or was not recorded (served without
// an arm, or feedback off).
func (f *Feedback) Record(model string, req *tritonpb.ModelInferRequest, res *pipeline.Result) (assigned string) {
	if f == nil || f.w == nil || res == nil || res.Response == nil || res.Choice.Arm == "" {
		return ""
	}
	id := req.GetId()
	if id == "" {
		id = f.newID()
		assigned = id
	}
	if err := f.w.Record(id, served(model, res)); err != nil {
		// Only an empty name or id is refused, which cannot happen here.
		f.log.Error("recording a request for feedback", "model", model, "error", err)
		return ""
	}
	if assigned != "" {
		if res.Response.Parameters == nil {
			res.Response.Parameters = map[string]*tritonpb.InferParameter{}
		}
		res.Response.Parameters[KeyRequestID] = &tritonpb.InferParameter{
			ParameterChoice: &tritonpb.InferParameter_StringParam{StringParam: assigned}}
	}
	return assigned
}

// served is what the window holds of a request served with an arm: the
// arm's preference (its preset's name for a preset) and, per head output
// read as logits, the class predicted for the request's one row
// (feedback.NoClass for several rows).
func served(model string, res *pipeline.Result) feedback.Served {
	c := res.Choice
	pref := c.Canonical()
	if c.Source == control.SourceArm && c.Preset != "" {
		pref = c.Preset
	}
	s := feedback.Served{Model: model, Experiment: c.Experiment, Arm: c.Arm, Preference: pref}
	for _, p := range res.Predictions {
		class := feedback.NoClass
		if len(p.Class) == 1 {
			class = p.Class[0]
		}
		s.Predictions = append(s.Predictions, feedback.Prediction{Output: p.Output, Task: p.Task, Class: class, Classes: p.Classes})
	}
	return s
}

// HTTPInterceptor returns the seam of the HTTP proxy with the feedback
// route in front of next: POST /v2/models/{model}/feedback is answered
// here, whatever the model (an id the window never held is unknown), and
// never reaches Triton; every other request goes to next (nil: passed
// through).
func (f *Feedback) HTTPInterceptor(next passthrough.HTTPInterceptor) passthrough.HTTPInterceptor {
	return func(r *http.Request, pass http.Handler) http.Handler {
		if rt, ok := restapi.ParseRoute(r.URL.Path); ok && rt.Action == Action {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { f.serveHTTP(w, r, rt) })
		}
		if next == nil {
			return nil
		}
		return next(r, pass)
	}
}

// serveHTTP answers POST /v2/models/{model}/feedback: the JSON body of
// feedback.ParseRequest, at most feedback.MaxBodyBytes, joined to the
// request it names; the answer is the joined outcome as JSON, or Triton's
// error form with feedback.HTTPStatus's status.
func (f *Feedback) serveHTTP(w http.ResponseWriter, r *http.Request, rt restapi.Route) {
	switch {
	case rt.Version != "":
		passthrough.WriteHTTPError(w, http.StatusNotFound,
			fmt.Sprintf("sidecar: feedback is reported per model, without a version: POST /v2/models/%s/feedback", rt.Model))
		return
	case r.Method != http.MethodPost:
		w.Header().Set("Allow", http.MethodPost)
		passthrough.WriteHTTPError(w, http.StatusMethodNotAllowed, "sidecar: feedback is reported with POST")
		return
	case f.Window() == nil:
		passthrough.WriteHTTPError(w, http.StatusNotImplemented, disabledMessage)
		return
	}
	if enc := r.Header.Get("Content-Encoding"); enc != "" && enc != "identity" {
		passthrough.WriteHTTPError(w, http.StatusUnsupportedMediaType, fmt.Sprintf("sidecar: a feedback body is plain JSON, not Content-Encoding %q", enc))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, feedback.MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			passthrough.WriteHTTPError(w, http.StatusRequestEntityTooLarge,
				fmt.Sprintf("sidecar: a feedback body has at most %d bytes", feedback.MaxBodyBytes))
		case passthrough.IsReadTimeout(err):
			passthrough.WriteHTTPError(w, http.StatusRequestTimeout, "sidecar: "+passthrough.ErrReadTimeout.Error())
		default:
			passthrough.WriteHTTPError(w, http.StatusBadRequest, "sidecar: reading the feedback: "+err.Error())
		}
		return
	}
	j, err := f.w.JoinRequest(rt.Model, body)
	if code := feedback.HTTPStatus(err); err != nil {
		passthrough.WriteHTTPError(w, code, err.Error())
		return
	}
	out, err := json.Marshal(j.Response())
	if err != nil {
		passthrough.WriteHTTPError(w, http.StatusInternalServerError, "sidecar: encoding the answer: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(out)
}

// RegisterGRPC registers the react.Feedback service on s (the sidecar's
// gRPC server, beside the pass-through).
func (f *Feedback) RegisterGRPC(s grpc.ServiceRegistrar) {
	tritonpb.RegisterFeedbackServer(s, service{f: f})
}

// service is react.Feedback.
type service struct {
	tritonpb.UnimplementedFeedbackServer
	f *Feedback
}

// ModelFeedback joins one outcome to the request it names; its error is
// experiment/feedback's *Error, whose status carries feedback.GRPCCode's
// code.
func (s service) ModelFeedback(_ context.Context, req *tritonpb.ModelFeedbackRequest) (*tritonpb.ModelFeedbackResponse, error) {
	w := s.f.Window()
	if w == nil {
		return nil, status.Error(codes.Unimplemented, disabledMessage)
	}
	return w.JoinProto(req)
}

// FromConfig returns the process's Feedback as c configures it: a join
// window of c's size and age, its metrics registered on reg, or, when c
// turns feedback off, a Feedback without a window.
func FromConfig(c config.Feedback, reg prometheus.Registerer, log *slog.Logger) (*Feedback, error) {
	if !c.Enabled {
		return New(nil, log), nil
	}
	w, err := feedback.NewWindow(c.Options())
	if err != nil {
		return nil, fmt.Errorf("feedback: %w", err)
	}
	if reg != nil {
		if err := w.Register(reg); err != nil {
			return nil, fmt.Errorf("feedback: %w", err)
		}
	}
	return New(w, log), nil
}
