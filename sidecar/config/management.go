package config

import (
	"fmt"
	"os"
	"strings"
)

// ManagementCall is one call of Triton's management API, as
// management.allow names it: the gRPC method of inference.GRPCInferenceService
// and the HTTP routes that do the same.
type ManagementCall struct {
	// Name is the gRPC method name, such as "RepositoryModelLoad".
	Name string
	// HTTP describes the HTTP routes, for documentation and messages.
	HTTP string
}

// ManagementCalls are the calls of Triton's management API (Triton 2.51),
// all closed through the sidecar unless management.allow lists them.
var ManagementCalls = []ManagementCall{
	{"RepositoryIndex", "POST /v2/repository/index"},
	{"RepositoryModelLoad", "POST /v2/repository/models/{model}/load"},
	{"RepositoryModelUnload", "POST /v2/repository/models/{model}/unload"},
	{"SystemSharedMemoryStatus", "GET /v2/systemsharedmemory[/region/{region}]/status"},
	{"SystemSharedMemoryRegister", "POST /v2/systemsharedmemory/region/{region}/register"},
	{"SystemSharedMemoryUnregister", "POST /v2/systemsharedmemory[/region/{region}]/unregister"},
	{"CudaSharedMemoryStatus", "GET /v2/cudasharedmemory[/region/{region}]/status"},
	{"CudaSharedMemoryRegister", "POST /v2/cudasharedmemory/region/{region}/register"},
	{"CudaSharedMemoryUnregister", "POST /v2/cudasharedmemory[/region/{region}]/unregister"},
	{"TraceSetting", "GET, POST /v2[/models/{model}[/versions/{version}]]/trace/setting"},
	{"LogSettings", "GET, POST /v2/logging"},
}

// IsManagementCall reports whether name is one of ManagementCalls.
func IsManagementCall(name string) bool {
	for _, c := range ManagementCalls {
		if c.Name == name {
			return true
		}
	}
	return false
}

// MinTokenLength is the shortest bearer token management.token_file may
// hold.
const MinTokenLength = 16

// ReadTokens reads a file of bearer tokens: one a line, surrounding white
// space ignored, blank lines and lines starting with '#' skipped. Several
// tokens let clients move from an old one to a new one without a failed
// call. It fails when the file cannot be read, holds no token, or holds
// one shorter than MinTokenLength or with white space inside.
func ReadTokens(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var tokens []string
	for i, line := range strings.Split(string(data), "\n") {
		tok := strings.TrimSpace(line)
		if tok == "" || strings.HasPrefix(tok, "#") {
			continue
		}
		switch {
		case strings.ContainsAny(tok, " \t"):
			return nil, fmt.Errorf("%s: line %d: a token has no white space inside", path, i+1)
		case len(tok) < MinTokenLength:
			return nil, fmt.Errorf("%s: line %d: a token of %d characters: want at least %d", path, i+1, len(tok), MinTokenLength)
		}
		tokens = append(tokens, tok)
	}
	if len(tokens) == 0 {
		return nil, fmt.Errorf("%s holds no token", path)
	}
	return tokens, nil
}
