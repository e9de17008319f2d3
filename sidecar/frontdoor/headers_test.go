package frontdoor

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// TestHeaderSizeBoundary: a header section of exactly
// server.max_header_bytes, counted as HTTP/2 counts it (name, value and
// 32 bytes a field, Host included on HTTP), passes; one byte more is
// refused, with 431 over HTTP and INVALID_ARGUMENT over gRPC.
func TestHeaderSizeBoundary(t *testing.T) {
	// Host "h:1": 4+3+32; X-A "vv": 3+2+32; X-Bb "w" and "": 4+1+32, 4+0+32.
	const httpSize = (4 + 3 + 32) + (3 + 2 + 32) + (4 + 1 + 32) + (4 + 0 + 32)
	req := func() *http.Request {
		r := httptest.NewRequest(http.MethodGet, "http://h:1/v2/health/live", nil)
		r.Header = http.Header{"X-A": {"vv"}, "X-Bb": {"w", ""}}
		return r
	}
	if got := httpHeaderSize(req()); got != httpSize {
		t.Errorf("httpHeaderSize = %d, want %d", got, httpSize)
	}
	passed := false
	next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { passed = true })
	for _, tt := range []struct {
		limit int
		code  int
	}{
		{httpSize, http.StatusOK},
		{httpSize - 1, http.StatusRequestHeaderFieldsTooLarge},
	} {
		passed = false
		rec := httptest.NewRecorder()
		limitHTTPHeaders(tt.limit, nil, next).ServeHTTP(rec, req())
		if rec.Code != tt.code || passed != (tt.code == http.StatusOK) {
			t.Errorf("limit %d: %d (passed on: %v), want %d", tt.limit, rec.Code, passed, tt.code)
		}
	}

	md := metadata.MD{"a": {"bc", "d"}, "xyz": {""}}
	const mdSize = (1 + 2 + 32) + (1 + 1 + 32) + (3 + 0 + 32)
	if got := metadataSize(md); got != mdSize {
		t.Errorf("metadataSize = %d, want %d", got, mdSize)
	}
	if err := checkMetadataSize(md, mdSize); err != nil {
		t.Errorf("limit %d: %v, want none", mdSize, err)
	}
	if err := checkMetadataSize(md, mdSize-1); status.Code(err) != codes.InvalidArgument {
		t.Errorf("limit %d: %v, want INVALID_ARGUMENT", mdSize-1, err)
	}
}
