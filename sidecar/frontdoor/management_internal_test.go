package frontdoor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/passthrough"
)

// managementRoutes are an HTTP route of each management call, as Triton
// 2.51 routes them.
var managementRoutes = map[string]string{
	"RepositoryIndex":              "/v2/repository/index",
	"RepositoryModelLoad":          "/v2/repository/models/head_greek/load",
	"RepositoryModelUnload":        "/v2/repository/models/head_greek/unload",
	"SystemSharedMemoryStatus":     "/v2/systemsharedmemory/status",
	"SystemSharedMemoryRegister":   "/v2/systemsharedmemory/region/r0/register",
	"SystemSharedMemoryUnregister": "/v2/systemsharedmemory/unregister",
	"CudaSharedMemoryStatus":       "/v2/cudasharedmemory/region/r0/status",
	"CudaSharedMemoryRegister":     "/v2/cudasharedmemory/region/r0/register",
	"CudaSharedMemoryUnregister":   "/v2/cudasharedmemory/region/r0/unregister",
	"TraceSetting":                 "/v2/trace/setting",
	"LogSettings":                  "/v2/logging",
}

func TestHTTPManagementCall(t *testing.T) {
	tests := []struct {
		path string
		call string
		ok   bool
	}{
		{"/v2/repository/index", "RepositoryIndex", true},
		{"/v2/repository/models/x/load", "RepositoryModelLoad", true},
		{"/v2/repository/models/x/unload", "RepositoryModelUnload", true},
		// Spellings Triton might route the same: decoded, cleaned, any case.
		{"//v2//repository/models/x/load", "RepositoryModelLoad", true},
		{"/v2/./repository/models/x/../y/unload", "RepositoryModelUnload", true},
		{"/V2/Repository/Models/x/LOAD", "RepositoryModelLoad", true},
		{"/v2/repository/models/a/b/load", "RepositoryModelLoad", true}, // a name with a (decoded) slash
		// Other routes of the families: refused, whatever they are.
		{"/v2/repository", "", true},
		{"/v2/repository/models/x", "", true},
		{"/v2/systemsharedmemory/region/r/status", "SystemSharedMemoryStatus", true},
		{"/v2/systemsharedmemory/register", "SystemSharedMemoryRegister", true},
		{"/v2/systemsharedmemory/region/r/unregister", "SystemSharedMemoryUnregister", true},
		{"/v2/systemsharedmemory", "", true},
		{"/v2/cudasharedmemory/status", "CudaSharedMemoryStatus", true},
		{"/v2/cudasharedmemory/region/r/register", "CudaSharedMemoryRegister", true},
		{"/v2/trace/setting", "TraceSetting", true},
		{"/v2/models/fashion/trace/setting", "TraceSetting", true},
		{"/v2/models/fashion/versions/1/trace/setting", "TraceSetting", true},
		{"/v2/logging", "LogSettings", true},
		// The inference API passes, models named like management routes too.
		{"/v2/health/ready", "", false},
		{"/v2", "", false},
		{"/v2/models/logging", "", false},
		{"/v2/models/trace/infer", "", false},
		{"/v2/models/repository/ready", "", false},
		{"/v2/models/stats", "", false},
		{"/metrics", "", false},
	}
	for _, tt := range tests {
		call, ok := httpManagementCall(tt.path)
		if call != tt.call || ok != tt.ok {
			t.Errorf("httpManagementCall(%q) = %q, %v; want %q, %v", tt.path, call, ok, tt.call, tt.ok)
		}
	}
	// Every call has a route, and each route is its call's.
	for _, c := range config.ManagementCalls {
		if call, ok := httpManagementCall(managementRoutes[c.Name]); !ok || call != c.Name {
			t.Errorf("route %q of %s: %q, %v", managementRoutes[c.Name], c.Name, call, ok)
		}
	}
}

// TestManagementTokenNotEchoed: the refusal never echoes what the client
// sent as a token.
func TestManagementTokenNotEchoed(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	os.WriteFile(tokens, []byte("the-real-token-0123456789\n"), 0o600)
	guard, err := NewManagement(config.Management{Allow: []string{"LogSettings"}, TokenFile: tokens}, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := guard.check("http", "LogSettings", "Bearer guessed-token-42")
	if st == nil || strings.Contains(st.Message(), "guessed") || strings.Contains(st.Message(), "the-real-token") {
		t.Errorf("refusal %v", st)
	}
}

// TestManagementNilGuardClosed: a nil guard is closed too (the part of
// TestManagementClosedByDefault that needs no server).
func TestManagementNilGuardClosed(t *testing.T) {
	var none *Management
	if err := none.checkGRPC(passthrough.Service+"RepositoryModelLoad", nil); status.Code(err) != codes.PermissionDenied {
		t.Errorf("nil guard: %v", err)
	}
}
