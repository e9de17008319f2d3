package outcomes

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mergectl/react-triton/experiment/feedback"
	"github.com/mergectl/react-triton/sidecar/config"
)

// failingBody is a request body whose reads fail with err.
type failingBody struct{ err error }

func (b failingBody) Read([]byte) (int, error) { return 0, b.err }
func (b failingBody) Close() error             { return nil }

// TestServeHTTPBody: how the feedback route reads a body. Content-Encoding
// identity is plain JSON, joined; another encoding is refused; a body that
// stopped coming before server.read_timeout is answered 408, another
// failed read 400.
func TestServeHTTPBody(t *testing.T) {
	for _, tc := range []struct {
		name     string
		encoding string
		body     io.ReadCloser
		want     int
	}{
		{"plain", "", nil, http.StatusOK},
		{"identity", "identity", nil, http.StatusOK},
		{"gzip", "gzip", nil, http.StatusUnsupportedMediaType},
		{"read timeout", "", failingBody{fmt.Errorf("read: %w", os.ErrDeadlineExceeded)}, http.StatusRequestTimeout},
		{"read failed", "", failingBody{errors.New("connection reset")}, http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := feedback.NewWindow(feedback.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Record("r1", feedback.Served{Model: "m", Experiment: "e", Arm: "a"}); err != nil {
				t.Fatal(err)
			}
			r := httptest.NewRequest(http.MethodPost, "/v2/models/m/feedback", bytes.NewReader([]byte(`{"id": "r1", "reward": 1}`)))
			if tc.body != nil {
				r.Body = tc.body
			}
			if tc.encoding != "" {
				r.Header.Set("Content-Encoding", tc.encoding)
			}
			h := New(w, nil).HTTPInterceptor(nil)(r, nil)
			if h == nil {
				t.Fatal("the feedback route was passed through")
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			if rec.Code != tc.want {
				t.Errorf("status %d (%s), want %d", rec.Code, rec.Body, tc.want)
			}
			if joined := w.Len() == 0; joined != (tc.want == http.StatusOK) {
				t.Errorf("joined %v, answered %d", joined, rec.Code)
			}
		})
	}
}

// TestFromConfig: feedback on gives a window of the section's size with
// its metrics registered on the registry given (none without one);
// feedback off gives none.
func TestFromConfig(t *testing.T) {
	on := config.Feedback{Enabled: true, MaxEntries: 7, MaxAge: 3 * time.Second}
	reg := prometheus.NewPedanticRegistry()
	f, err := FromConfig(on, reg, nil)
	if err != nil || f.Window() == nil || f.Window().Options().MaxEntries != 7 || f.Window().Options().MaxAge != 3*time.Second {
		t.Fatalf("on: %v, %+v", err, f.Window())
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	capacity := -1.0
	for _, mf := range mfs {
		if mf.GetName() == feedback.MetricCapacity {
			capacity = mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	if capacity != 7 {
		t.Errorf("%s = %v on the registry, want 7", feedback.MetricCapacity, capacity)
	}
	if _, err := FromConfig(on, reg, nil); err == nil {
		t.Error("a second window registered on the same registry")
	}
	if f, err := FromConfig(on, nil, nil); err != nil || f.Window() == nil {
		t.Errorf("on, no registry: %v, %v", f.Window(), err)
	}
	if f, err := FromConfig(config.Feedback{MaxEntries: 7}, reg, nil); err != nil || f.Window() != nil {
		t.Errorf("off: %v, %v", f.Window(), err)
	}
}
