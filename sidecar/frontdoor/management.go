package frontdoor

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"path"
	"strings"
	"sync/atomic"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/metrics"
	"github.com/mergectl/react-triton/sidecar/passthrough"
)

// Management guards Triton's management API (config.ManagementCalls): a
// call is refused with 403 / PERMISSION_DENIED unless the configuration
// allows it, and with 401 / UNAUTHENTICATED when tokens are configured and
// it carries none of them. Every other call passes. Set replaces the
// policy atomically (a reload); the zero value, and a nil *Management,
// allow no management call.
type Management struct {
	policy  atomic.Pointer[ManagementPolicy]
	refused func(protocol, call, reason string) // counts refusals; may be nil
}

// ManagementPolicy is one configuration's management section, ready to
// check (NewManagementPolicy) and to put in service (Management.Use).
type ManagementPolicy struct {
	allow  map[string]bool
	tokens [][sha256.Size]byte // SHA-256 of each token; nil: none asked
}

// NewManagement returns a guard with the policy of c. m may be nil.
func NewManagement(c config.Management, m *metrics.Metrics) (*Management, error) {
	g := &Management{}
	if m != nil {
		g.refused = m.ManagementRefused
	}
	if err := g.Set(c); err != nil {
		return nil, err
	}
	return g, nil
}

// Set replaces the policy with c's, reading its token file. On error the
// old policy stays.
func (g *Management) Set(c config.Management) error {
	p, err := NewManagementPolicy(c)
	if err != nil {
		return err
	}
	g.Use(p)
	return nil
}

// Use puts a policy in service, from the next call on.
func (g *Management) Use(p *ManagementPolicy) { g.policy.Store(p) }

// NewManagementPolicy reads c's token file and returns its policy, for
// Use once whatever else depends on the same configuration is ready.
func NewManagementPolicy(c config.Management) (*ManagementPolicy, error) {
	p := &ManagementPolicy{allow: make(map[string]bool, len(c.Allow))}
	for _, name := range c.Allow {
		p.allow[name] = true
	}
	if c.TokenFile != "" {
		tokens, err := config.ReadTokens(c.TokenFile)
		if err != nil {
			return nil, &configError{path: "management.token_file", err: err}
		}
		for _, t := range tokens {
			p.tokens = append(p.tokens, sha256.Sum256([]byte(t)))
		}
	}
	return p, nil
}

// configError is a problem with a configuration value found after
// config.Load, named by its path.
type configError struct {
	path string
	err  error
}

func (e *configError) Error() string { return e.path + ": " + e.err.Error() }
func (e *configError) Unwrap() error { return e.err }

// check decides on a management call (call is a config.ManagementCalls
// name, or "" for a route of the repository or shared-memory families that
// is none of them) given its Authorization value, and returns nil to let it
// pass, or a PERMISSION_DENIED or UNAUTHENTICATED status.
func (g *Management) check(protocol, call, authorization string) *status.Status {
	var p *ManagementPolicy
	if g != nil {
		p = g.policy.Load()
	}
	var st *status.Status
	reason := ""
	switch {
	case call == "":
		st, reason = status.New(codes.PermissionDenied, "sidecar: this route of Triton's management API is not served through the sidecar"), "denied"
	case p == nil || !p.allow[call]:
		st, reason = status.Newf(codes.PermissionDenied, "sidecar: %s is closed: Triton's management API passes through the sidecar only for the calls listed in management.allow", call), "denied"
	case p.tokens != nil && !p.authorized(authorization):
		st, reason = status.Newf(codes.Unauthenticated, "sidecar: %s needs a bearer token of management.token_file", call), "unauthenticated"
	}
	if st != nil && g != nil && g.refused != nil {
		label := call
		if label == "" {
			label = "other"
		}
		g.refused(protocol, label, reason)
	}
	return st
}

// tokensRequired reports whether allowed calls need a token (so that the
// guard consumes the Authorization value instead of passing it on).
func (g *Management) tokensRequired() bool {
	if g == nil {
		return false
	}
	p := g.policy.Load()
	return p != nil && p.tokens != nil
}

// authorized reports whether an Authorization value carries one of the
// tokens, comparing digests in constant time.
func (p *ManagementPolicy) authorized(authorization string) bool {
	scheme, token, ok := strings.Cut(strings.TrimSpace(authorization), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(token)))
	match := 0
	for _, t := range p.tokens {
		match |= subtle.ConstantTimeCompare(sum[:], t[:])
	}
	return match == 1
}

// grpcManagementCalls maps the full gRPC method names of the management
// calls to their names.
var grpcManagementCalls = func() map[string]string {
	m := make(map[string]string, len(config.ManagementCalls))
	for _, c := range config.ManagementCalls {
		m[passthrough.Service+c.Name] = c.Name
	}
	return m
}()

// checkGRPC guards a gRPC call: it returns nil for a call that is not a
// management call or is allowed, and the status to end it with otherwise.
// An allowed call that needed a token has its authorization metadata
// removed from md, so that the token does not reach Triton.
func (g *Management) checkGRPC(method string, md metadata.MD) error {
	call, ok := grpcManagementCalls[method]
	if !ok {
		return nil
	}
	var auth string
	if v := md.Get("authorization"); len(v) > 0 {
		auth = v[0]
	}
	if st := g.check("grpc", call, auth); st != nil {
		return st.Err()
	}
	if g.tokensRequired() {
		delete(md, "authorization")
	}
	return nil
}

// HTTP wraps next with the guard: a request for a management route is
// answered 403 or 401 (with WWW-Authenticate) unless allowed, and an
// allowed one that needed a token has its Authorization header removed.
func (g *Management) HTTP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		call, ok := httpManagementCall(r.URL.Path)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		st := g.check("http", call, r.Header.Get("Authorization"))
		if st == nil {
			if g.tokensRequired() {
				r.Header.Del("Authorization")
			}
			next.ServeHTTP(w, r)
			return
		}
		code := http.StatusForbidden
		if st.Code() == codes.Unauthenticated {
			code = http.StatusUnauthorized
			w.Header().Set("WWW-Authenticate", `Bearer realm="react-sidecar"`)
		}
		passthrough.WriteHTTPError(w, code, st.Message())
	})
}

// httpManagementCall classifies an HTTP path: ok is true for a route of
// Triton's management API, with the call it belongs to ("" for a route of
// those families that is none of the calls). The path is compared
// decoded, cleaned (repeated slashes and dot segments resolved) and
// without regard to case, so that no spelling Triton might route reaches
// it unchecked; a route wrongly taken for a management one is refused,
// never one wrongly passed.
func httpManagementCall(p string) (call string, ok bool) {
	p = strings.ToLower(path.Clean("/" + p))
	rest, found := strings.CutPrefix(p, "/v2/")
	if !found {
		return "", false
	}
	last := rest[strings.LastIndexByte(rest, '/')+1:]
	switch {
	case rest == "logging" || strings.HasPrefix(rest, "logging/"):
		return "LogSettings", true
	case strings.HasSuffix(rest, "/trace/setting") || rest == "trace/setting" || strings.HasPrefix(rest, "trace/"):
		return "TraceSetting", true
	case rest == "repository" || strings.HasPrefix(rest, "repository/"):
		switch {
		case rest == "repository/index":
			return "RepositoryIndex", true
		case strings.HasPrefix(rest, "repository/models/") && last == "load":
			return "RepositoryModelLoad", true
		case strings.HasPrefix(rest, "repository/models/") && last == "unload":
			return "RepositoryModelUnload", true
		}
		return "", true
	case rest == "systemsharedmemory" || strings.HasPrefix(rest, "systemsharedmemory/"):
		return sharedMemoryCall("SystemSharedMemory", last), true
	case rest == "cudasharedmemory" || strings.HasPrefix(rest, "cudasharedmemory/"):
		return sharedMemoryCall("CudaSharedMemory", last), true
	}
	return "", false
}

// sharedMemoryCall names the shared-memory call of a route's last segment.
func sharedMemoryCall(family, last string) string {
	switch last {
	case "status":
		return family + "Status"
	case "register":
		return family + "Register"
	case "unregister":
		return family + "Unregister"
	}
	return ""
}
