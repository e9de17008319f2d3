package passthrough

import (
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
	got := Forwardable(in)
	// ReACT's own keys never reach Triton.
	want := metadata.MD{
		"x-multi":        {"a", "b"},
		"trace-bin":      {"\x00\xff"},
		"grpc-trace-bin": {"\x01"},
	}
	if len(got) != len(want) {
		t.Fatalf("Forwardable = %v, want %v", got, want)
	}
	for k, v := range want {
		if g := got[k]; len(g) != len(v) || (len(v) > 0 && g[0] != v[0]) || (len(v) > 1 && g[1] != v[1]) {
			t.Errorf("%s = %q, want %q", k, g, v)
		}
	}
	got["x-multi"][0] = "changed"
	if in["x-multi"][0] != "a" {
		t.Error("Forwardable shares value slices with its input")
	}
}
