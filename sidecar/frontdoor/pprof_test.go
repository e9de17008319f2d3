package frontdoor_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mergectl/react-triton/sidecar/frontdoor"
	"github.com/mergectl/react-triton/sidecar/internal/sidecartest"
	"github.com/mergectl/react-triton/sidecar/metrics"
	"github.com/mergectl/react-triton/sidecar/server"
)

// TestPprofOffTheMetricsListener: the metrics handler serves no profiles.
func TestPprofOffTheMetricsListener(t *testing.T) {
	rec := httptest.NewRecorder()
	metrics.New().Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/pprof/", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("/debug/pprof/ on the metrics handler: %d, want 404", rec.Code)
	}
}

// TestPprofSecondsBound: a profile, trace or delta of more than
// max_seconds is refused with 400; the index and short ones are served.
func TestPprofSecondsBound(t *testing.T) {
	h := frontdoor.PprofHandler(2)
	for _, tt := range []struct {
		path string
		code int
	}{
		{"/debug/pprof/", http.StatusOK},
		{"/debug/pprof/profile?seconds=3", http.StatusBadRequest},
		{"/debug/pprof/profile?seconds=100000", http.StatusBadRequest},
		{"/debug/pprof/profile?seconds=-1", http.StatusBadRequest},
		{"/debug/pprof/profile?seconds=x", http.StatusBadRequest},
		{"/debug/pprof/trace?seconds=3", http.StatusBadRequest},
		{"/debug/pprof/heap?seconds=3", http.StatusBadRequest},
		{"/debug/pprof/heap", http.StatusOK},
		{"/debug/pprof/trace?seconds=1", http.StatusOK},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tt.path, nil))
		if rec.Code != tt.code {
			t.Errorf("%s: %d %s, want %d", tt.path, rec.Code, strings.TrimSpace(rec.Body.String()), tt.code)
		}
	}
}

// TestPprofListener: the profiles are served on their own listener only.
func TestPprofListener(t *testing.T) {
	s, _ := sidecartest.StartRecorded(t, server.Config{PprofListen: "127.0.0.1:0", PprofHandler: frontdoor.PprofHandler(30)})
	resp, err := http.Get("http://" + s.PprofAddr().String() + "/debug/pprof/")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%v %v", resp, err)
	}
	resp.Body.Close()
	if s.MetricsAddr() != nil {
		t.Error("a metrics listener without MetricsListen")
	}
	s2, _ := sidecartest.StartRecorded(t, server.Config{})
	if s2.PprofAddr() != nil {
		t.Error("profiles served without PprofListen")
	}
}
