package outcomes

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/experiment/feedback"
	"github.com/mergectl/react-triton/sidecar/pipeline"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// errorLog counts the records at level error or above.
type errorLog struct {
	mu sync.Mutex
	n  int
}

func (h *errorLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *errorLog) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError {
		h.mu.Lock()
		h.n++
		h.mu.Unlock()
	}
	return nil
}
func (h *errorLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *errorLog) WithGroup(string) slog.Handler      { return h }

// TestRecordUnit calls Record directly: a request served without an arm
// is not recorded, gets no id and logs nothing (every request outside an
// experiment passes here); a request with its own id is recorded under
// it and its response gets no react-request-id; one without gets a drawn
// id, set in the response; the joined preference is the canonical form
// for an arm that is not a preset and the preset's name for one that is.
func TestRecordUnit(t *testing.T) {
	const model = "m"
	for _, tc := range []struct {
		name     string
		reqID    string
		choice   control.Choice
		recorded bool
		assigned bool   // an id drawn and set in the response
		pref     string // the joined preference when recorded
	}{
		{"no arm", "", control.Choice{Key: "a=1", Source: control.SourceArm, Experiment: "e"}, false, false, ""},
		{"no arm, own id", "r1", control.Choice{Key: "a=1"}, false, false, ""},
		{"own id", "r2", control.Choice{Key: "a=1", Source: control.SourceArm, Experiment: "e", Arm: "x"}, true, false, "a=1"},
		{"no id", "", control.Choice{Key: "a=1", Source: control.SourceArm, Experiment: "e", Arm: "x"}, true, true, "a=1"},
		{"preset arm", "r3", control.Choice{Key: "a=1", Source: control.SourceArm, Preset: "fast", Experiment: "e", Arm: "y"}, true, false, "fast"},
		{"arm without correction", "r4", control.Choice{Source: control.SourceArm, Experiment: "e", Arm: "z"}, true, false, control.None},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := feedback.NewWindow(feedback.Options{MaxEntries: 8})
			if err != nil {
				t.Fatal(err)
			}
			h := &errorLog{}
			f := New(w, slog.New(h))
			f.newID = func() string { return "drawn" }
			res := &pipeline.Result{Response: &tritonpb.ModelInferResponse{}, Choice: tc.choice}
			got := f.Record(model, &tritonpb.ModelInferRequest{Id: tc.reqID}, res)
			wantAssigned := ""
			if tc.assigned {
				wantAssigned = "drawn"
			}
			if got != wantAssigned {
				t.Errorf("assigned %q, want %q", got, wantAssigned)
			}
			p, ok := res.Response.GetParameters()[KeyRequestID]
			if ok != tc.assigned || (ok && p.GetStringParam() != "drawn") {
				t.Errorf("react-request-id parameter %v (present %v), want present %v", p, ok, tc.assigned)
			}
			if n := w.Len(); n != map[bool]int{false: 0, true: 1}[tc.recorded] {
				t.Errorf("window holds %d requests, recorded %v", n, tc.recorded)
			}
			if h.n != 0 {
				t.Errorf("%d error records logged", h.n)
			}
			if !tc.recorded {
				return
			}
			id := tc.reqID
			if id == "" {
				id = "drawn"
			}
			j, err := w.Join(model, feedback.Feedback{ID: id, Kind: feedback.Reward, Value: 1})
			if err != nil {
				t.Fatal(err)
			}
			if j.Arm != tc.choice.Arm || j.Experiment != "e" || j.Preference != tc.pref {
				t.Errorf("joined arm %q experiment %q preference %q, want %q e %q", j.Arm, j.Experiment, j.Preference, tc.choice.Arm, tc.pref)
			}
		})
	}
}
