package metrics

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestHealthz: the metrics listener answers the liveness probe of
// docker/k8s with 200, without asking Triton (there is none here), and
// refuses other methods.
func TestHealthz(t *testing.T) {
	h := New().Handler()
	for method, want := range map[string]int{http.MethodGet: 200, http.MethodHead: 200, http.MethodPost: 405} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, "/healthz", nil))
		if rec.Code != want {
			t.Errorf("%s /healthz: %d, want %d", method, rec.Code, want)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if got := rec.Body.String(); got != "ok\n" {
		t.Errorf("GET /healthz body %q, want %q", got, "ok\n")
	}
}
