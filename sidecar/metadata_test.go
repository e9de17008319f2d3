package sidecar

import (
	"net/http"
	"reflect"
	"testing"

	"google.golang.org/grpc/metadata"
)

func TestForwardable(t *testing.T) {
	in := metadata.MD{
		":authority":           {"sidecar:9001"},
		"content-type":         {"application/grpc"},
		"user-agent":           {"grpc-python/1.85"},
		"grpc-timeout":         {"5S"},
		"grpc-accept-encoding": {"identity,gzip"},
		"te":                   {"trailers"},
		"connection":           {"keep-alive"},
		"react-preference":     {"cars=0.6,dtd=0.4"},
		"React-Preset":         {"texture"},
		"x-multi":              {"a", "b"},
		"trace-bin":            {"\x00\xff"},
		"grpc-trace-bin":       {"\x01"},
	}
	got := forwardable(in)
	// ReACT's own keys never reach Triton.
	want := metadata.MD{
		"x-multi":        {"a", "b"},
		"trace-bin":      {"\x00\xff"},
		"grpc-trace-bin": {"\x01"},
	}
	if len(got) != len(want) {
		t.Fatalf("forwardable = %v, want %v", got, want)
	}
	for k, v := range want {
		if g := got[k]; len(g) != len(v) || (len(v) > 0 && g[0] != v[0]) || (len(v) > 1 && g[1] != v[1]) {
			t.Errorf("%s = %q, want %q", k, g, v)
		}
	}
	got["x-multi"][0] = "changed"
	if in["x-multi"][0] != "a" {
		t.Error("forwardable shares value slices with its input")
	}
}

// TestHTTPMetadata: of an HTTP request's headers, the gRPC calls to Triton
// carry those of triton.forward_headers only, lower-cased, repeated values
// kept; never a body header, a binary (-bin) key, which gRPC would decode
// as base64, or a value gRPC cannot carry as text (a call with one fails).
func TestHTTPMetadata(t *testing.T) {
	h := http.Header{}
	h.Add("Authorization", "Bearer t")
	h.Add("X-Multi", "a")
	h.Add("X-Multi", "b")
	h.Add("X-Unlisted", "u")
	h.Add("Content-Length", "12")
	h.Add("Trace-Bin", "AAEC")
	h.Add("X-Latin", "caf\xe9")
	h.Add("X-Ctl", "a\x01b")
	h.Add("React-Preference", "a=1")
	got := httpMetadata(h, []string{"authorization", "X-Multi", "content-length", "trace-bin", "x-latin", "x-ctl", "react-preference"})
	want := metadata.MD{"authorization": {"Bearer t"}, "x-multi": {"a", "b"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("httpMetadata = %q, want %q", got, want)
	}
}
