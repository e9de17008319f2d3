package restapi

import (
	"net/http"
	"reflect"
	"testing"

	"google.golang.org/grpc/metadata"

	"github.com/mergectl/react-triton/sidecar/passthrough"
)

// TestHTTPMetadata: of an HTTP request's headers, the gRPC calls to Triton
// carry those of triton.forward_headers only, lower-cased, repeated values
// kept; never a body header, a binary (-bin) key, which gRPC would decode
// as base64, a value gRPC cannot carry as text (a call with one fails), or
// a private key (the sampling opt-out header), listed or not.
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
	h.Add("X-No-Sample", "")
	got := GRPCMetadata(h, []string{"authorization", "X-Multi", "content-length", "trace-bin", "x-latin", "x-ctl", "react-preference", "x-no-sample"},
		passthrough.NewPrivateKeys("X-No-Sample"))
	want := metadata.MD{"authorization": {"Bearer t"}, "x-multi": {"a", "b"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("GRPCMetadata = %q, want %q", got, want)
	}
}
