package frontdoor_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/frontdoor"
	"github.com/mergectl/react-triton/sidecar/internal/sidecartest"
	"github.com/mergectl/react-triton/sidecar/metrics"
	"github.com/mergectl/react-triton/sidecar/passthrough"
	"github.com/mergectl/react-triton/sidecar/server"
)

// TestManagementClosedByDefault: with the default configuration, no call
// of the management API reaches Triton, on either protocol; the inference
// API still does.
func TestManagementClosedByDefault(t *testing.T) {
	m := metrics.New()
	guard, err := frontdoor.NewManagement(config.Default().Management, m)
	if err != nil {
		t.Fatal(err)
	}
	s, u := sidecartest.StartRecorded(t, server.Config{Management: guard, Metrics: m})
	conn := sidecartest.Dial(t, s.GRPCAddr().String())
	for _, c := range config.ManagementCalls {
		err := conn.Invoke(context.Background(), passthrough.Service+c.Name, &passthrough.Frame{}, &passthrough.Frame{}, grpc.ForceCodecV2(passthrough.Codec{}))
		if st := status.Convert(err); st.Code() != codes.PermissionDenied || !strings.Contains(st.Message(), c.Name) {
			t.Errorf("gRPC %s: %v, want PERMISSION_DENIED", c.Name, err)
		}
		for _, method := range []string{http.MethodPost, http.MethodGet} {
			resp, body := sidecartest.HTTPDo(t, method, "http://"+s.HTTPAddr().String()+frontdoor.ManagementRoutes[c.Name], []byte("{}"), nil)
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "management.allow") {
				t.Errorf("HTTP %s %s: %d %s, want 403", method, frontdoor.ManagementRoutes[c.Name], resp.StatusCode, body)
			}
		}
	}
	if g, h := u.Calls(); g != 0 || h != 0 {
		t.Errorf("%d gRPC calls and %d HTTP requests of the management API reached Triton", g, h)
	}
	if got, _ := sidecartest.MetricValue(sidecartest.Scrape(t, m.Handler()), "react_management_refused_total", map[string]string{"protocol": "http", "call": "RepositoryModelUnload", "reason": "denied"}); got != 2 {
		t.Errorf("react_management_refused_total{http,RepositoryModelUnload,denied} = %v, want 2", got)
	}
	// The rest of the API passes.
	if err := conn.Invoke(context.Background(), passthrough.Service+"ServerLive", &passthrough.Frame{}, &passthrough.Frame{}, grpc.ForceCodecV2(passthrough.Codec{})); err != nil {
		t.Errorf("ServerLive: %v", err)
	}
	if resp, body := sidecartest.HTTPDo(t, http.MethodGet, "http://"+s.HTTPAddr().String()+"/v2/health/live", nil, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("/v2/health/live: %d %s", resp.StatusCode, body)
	}
	if g, h := u.Calls(); g != 1 || h != 1 {
		t.Errorf("%d gRPC calls and %d HTTP requests reached Triton, want 1 and 1", g, h)
	}
}

// TestManagementAllowAndTokens: an allowed call passes; with a token file
// it needs one of its tokens (401 / UNAUTHENTICATED otherwise), which is
// not passed on to Triton; a call not allowed stays closed with a token;
// Set changes the policy at once.
func TestManagementAllowAndTokens(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	const old, current = "old-token-0123456789", "new-token-0123456789"
	if err := os.WriteFile(tokens, []byte("# rotating\n"+old+"\n"+current+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	guard, err := frontdoor.NewManagement(config.Management{Allow: []string{"RepositoryModelLoad", "LogSettings"}, TokenFile: tokens}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, u := sidecartest.StartRecorded(t, server.Config{Management: guard})
	conn := sidecartest.Dial(t, s.GRPCAddr().String())
	base := "http://" + s.HTTPAddr().String()
	grpcCall := func(method, auth string) error {
		ctx := context.Background()
		if auth != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, "authorization", auth)
		}
		return conn.Invoke(ctx, passthrough.Service+method, &passthrough.Frame{}, &passthrough.Frame{}, grpc.ForceCodecV2(passthrough.Codec{}))
	}
	httpCall := func(path, auth string) (*http.Response, string) {
		hdr := map[string]string{}
		if auth != "" {
			hdr["Authorization"] = auth
		}
		resp, body := sidecartest.HTTPDo(t, http.MethodPost, base+path, []byte("{}"), hdr)
		return resp, string(body)
	}
	for _, auth := range []string{"", "Bearer wrong-token-0123456789", "Basic " + current, current} {
		if err := grpcCall("RepositoryModelLoad", auth); status.Code(err) != codes.Unauthenticated {
			t.Errorf("gRPC load with %q: %v, want UNAUTHENTICATED", auth, err)
		}
		resp, body := httpCall(frontdoor.ManagementRoutes["RepositoryModelLoad"], auth)
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("HTTP load with %q: %d %s (WWW-Authenticate %q), want 401", auth, resp.StatusCode, body, resp.Header.Get("WWW-Authenticate"))
		}
	}
	if g, h := u.Calls(); g != 0 || h != 0 {
		t.Fatalf("unauthenticated calls reached Triton: %d gRPC, %d HTTP", g, h)
	}
	for _, tok := range []string{old, current} {
		if err := grpcCall("RepositoryModelLoad", "Bearer "+tok); err != nil {
			t.Errorf("gRPC load with a token: %v", err)
		}
		if md := u.LastMD(); len(md.Get("authorization")) != 0 {
			t.Errorf("the token reached Triton over gRPC: %v", md)
		}
		if resp, body := httpCall(frontdoor.ManagementRoutes["RepositoryModelLoad"], "bearer "+tok); resp.StatusCode != http.StatusOK {
			t.Errorf("HTTP load with a token: %d %s", resp.StatusCode, body)
		}
		if h := u.LastHeader(); h.Get("Authorization") != "" {
			t.Errorf("the token reached Triton over HTTP: %v", h)
		}
	}
	// Allowed with a token is not the same as open: unload stays closed.
	if err := grpcCall("RepositoryModelUnload", "Bearer "+current); status.Code(err) != codes.PermissionDenied {
		t.Errorf("gRPC unload: %v, want PERMISSION_DENIED", err)
	}
	if resp, body := httpCall(frontdoor.ManagementRoutes["RepositoryModelUnload"], "Bearer "+current); resp.StatusCode != http.StatusForbidden {
		t.Errorf("HTTP unload: %d %s, want 403", resp.StatusCode, body)
	}
	// The inference API keeps the client's Authorization (Triton's own
	// restricted endpoints may want it).
	if resp, body := httpCall("/v2/models/m/infer", "Bearer for-triton"); resp.StatusCode != http.StatusOK || u.LastHeader().Get("Authorization") != "Bearer for-triton" {
		t.Errorf("infer: %d %s, Authorization at Triton %q", resp.StatusCode, body, u.LastHeader().Get("Authorization"))
	}

	// A reload: no token file, unload allowed, load closed.
	if err := guard.Set(config.Management{Allow: []string{"RepositoryModelUnload"}}); err != nil {
		t.Fatal(err)
	}
	if err := grpcCall("RepositoryModelUnload", ""); err != nil {
		t.Errorf("gRPC unload after Set: %v", err)
	}
	if resp, body := httpCall(frontdoor.ManagementRoutes["RepositoryModelUnload"], ""); resp.StatusCode != http.StatusOK {
		t.Errorf("HTTP unload after Set: %d %s", resp.StatusCode, body)
	}
	if err := grpcCall("RepositoryModelLoad", "Bearer "+current); status.Code(err) != codes.PermissionDenied {
		t.Errorf("gRPC load after Set: %v, want PERMISSION_DENIED", err)
	}
	// A token file that does not read keeps the policy in force.
	if err := guard.Set(config.Management{Allow: []string{"LogSettings"}, TokenFile: filepath.Join(dir, "none")}); err == nil || !strings.Contains(err.Error(), "management.token_file") {
		t.Errorf("Set with a missing token file: %v", err)
	}
	if err := grpcCall("RepositoryModelUnload", ""); err != nil {
		t.Errorf("gRPC unload after a failed Set: %v", err)
	}
}
