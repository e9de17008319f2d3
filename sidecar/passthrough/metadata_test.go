package passthrough

import (
	"testing"

	"google.golang.org/grpc/metadata"
)

// TestForwardable: what a call made on a client's behalf forwards of its
// metadata.
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
		"x-no-sample":          {""},
	}
	got := Forwardable(in, NewPrivateKeys("X-No-Sample"))
	// ReACT's own keys and the private ones never reach Triton.
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
	if got := Forwardable(in, nil); len(got["x-no-sample"]) != 1 {
		t.Errorf("without private keys: x-no-sample = %q, want it forwarded", got["x-no-sample"])
	}
	got["x-multi"][0] = "changed"
	if in["x-multi"][0] != "a" {
		t.Error("Forwardable shares value slices with its input")
	}
}

// TestPrivateKeys: names match in any case; none is nil, and nil has none.
func TestPrivateKeys(t *testing.T) {
	p := NewPrivateKeys("X-No-Sample", "")
	for _, tc := range []struct {
		keys *PrivateKeys
		key  string
		want bool
	}{
		{p, "x-no-sample", true},
		{p, "X-NO-SAMPLE", true},
		{p, "x-no-samples", false},
		{p, "", false},
		{nil, "x-no-sample", false},
	} {
		if got := tc.keys.Has(tc.key); got != tc.want {
			t.Errorf("%v.Has(%q) = %v, want %v", tc.keys, tc.key, got, tc.want)
		}
	}
	if NewPrivateKeys() != nil || NewPrivateKeys("") != nil {
		t.Error("no keys: not nil")
	}
}
