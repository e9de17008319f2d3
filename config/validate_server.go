package config

import (
	"strings"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/internal/filecheck"
	"github.com/mergectl/react-triton/problem"
)

// minKeepaliveTime is the shortest server.grpc.keepalive_time grpc-go
// accepts (it raises shorter ones silently).
const minKeepaliveTime = 1e9 // 1s

func (c *Config) validateServer(p *problem.List) {
	s := &c.Server
	if s.MaxConnections < 1 {
		p.Add("server.max_connections", "must be at least 1, got %d", s.MaxConnections)
	}
	if s.MaxHeaderBytes < KiB || s.MaxHeaderBytes > MaxHeaderBytesLimit {
		p.Add("server.max_header_bytes", "must be between 1KiB and %v, got %v", MaxHeaderBytesLimit, s.MaxHeaderBytes)
	}
	if s.ReadHeaderTimeout <= 0 {
		p.Add("server.read_header_timeout", "must be positive, got %v", s.ReadHeaderTimeout)
	}
	nonNegative(p, "server.read_timeout", s.ReadTimeout)
	nonNegative(p, "server.write_timeout", s.WriteTimeout)
	nonNegative(p, "server.idle_timeout", s.IdleTimeout)

	g := &s.GRPC
	if g.MaxConcurrentStreams < 1 {
		p.Add("server.grpc.max_concurrent_streams", "must be at least 1, got %d", g.MaxConcurrentStreams)
	}
	if g.KeepaliveTime < minKeepaliveTime {
		p.Add("server.grpc.keepalive_time", "must be at least 1s, got %v", g.KeepaliveTime)
	}
	if g.KeepaliveTimeout <= 0 {
		p.Add("server.grpc.keepalive_timeout", "must be positive, got %v", g.KeepaliveTimeout)
	}
	nonNegative(p, "server.grpc.keepalive_min_time", g.KeepaliveMinTime)

	t := &s.TLS
	files := []struct{ key, path string }{
		{"cert_file", t.CertFile}, {"key_file", t.KeyFile}, {"client_ca_file", t.ClientCAFile},
	}
	if !t.Enabled {
		for _, f := range files {
			if f.path != "" {
				p.Add("server.tls."+f.key, "set while TLS is off: set server.tls.enabled: true to use it, or remove it")
			}
		}
		if t.Metrics {
			p.Add("server.tls.metrics", "set while TLS is off: set server.tls.enabled: true to use it, or remove it")
		}
		return
	}
	if t.CertFile == "" {
		p.Add("server.tls.cert_file", "required with TLS on: the server's certificate (PEM)")
	}
	if t.KeyFile == "" {
		p.Add("server.tls.key_file", "required with TLS on: the certificate's private key (PEM)")
	}
	for _, f := range files {
		if f.path != "" {
			if msg := filecheck.Regular(f.path); msg != "" {
				p.Add("server.tls."+f.key, "%s", msg)
			}
		}
	}
	if t.Metrics && c.Listen.Metrics == "" {
		p.Add("server.tls.metrics", "set while listen.metrics is off")
	}
}

func (c *Config) validateManagement(p *problem.List) {
	m := &c.Management
	seen := map[string]int{}
	for i, name := range m.Allow {
		path := problem.Index("management.allow", i)
		if !IsManagementCall(name) {
			names := make([]string, len(ManagementCalls))
			for j, mc := range ManagementCalls {
				names[j] = mc.Name
			}
			if s := suggest(name, names); s != "" {
				p.Add(path, "%q is not a management call, did you mean %q?", name, s)
			} else {
				p.Add(path, "%q is not a management call (want one of: %s)", name, strings.Join(names, ", "))
			}
			continue
		}
		if j, dup := seen[name]; dup {
			p.Add(path, "%q is also management.allow[%d]", name, j)
			continue
		}
		seen[name] = i
	}
	if m.TokenFile == "" {
		return
	}
	if len(m.Allow) == 0 {
		p.Add("management.token_file", "set while no management call is allowed: list the calls under management.allow, or remove it")
	}
	if msg := filecheck.Regular(m.TokenFile); msg != "" {
		p.Add("management.token_file", "%s", msg)
		return
	}
	if _, err := ReadTokens(m.TokenFile); err != nil {
		p.Add("management.token_file", "%v", err)
	}
}

func (c *Config) validatePprof(p *problem.List) {
	pp := &c.Pprof
	if pp.MaxSeconds < 1 {
		p.Add("pprof.max_seconds", "must be at least 1, got %d", pp.MaxSeconds)
	}
	if !pp.Enabled {
		return
	}
	if pp.Listen == "" {
		p.Add("pprof.listen", "required with pprof on: where to serve the profiles, host:port")
		return
	}
	if msg := checkAddr(pp.Listen, true); msg != "" {
		p.Add("pprof.listen", "%s", msg)
		return
	}
	for _, a := range []struct{ path, addr string }{
		{"listen.grpc", c.Listen.GRPC}, {"listen.http", c.Listen.HTTP}, {"listen.metrics", c.Listen.Metrics},
	} {
		if a.addr != "" && checkAddr(a.addr, true) == "" && sameSocket(a.addr, pp.Listen) {
			p.Add("pprof.listen", "%q is also %s: the listeners need different ports", pp.Listen, a.path)
		}
	}
}

// validateForwardHeaders checks triton.forward_headers: header names, none
// twice, none of ReACT's own keys (which never reach Triton).
func (c *Config) validateForwardHeaders(p *problem.List) {
	seen := map[string]int{}
	for i, h := range c.Triton.ForwardHeaders {
		path := problem.Index("triton.forward_headers", i)
		lower := strings.ToLower(h)
		switch {
		case !isHeaderName(h):
			p.Add(path, "%q is not a header name", h)
		case control.IsOwnKey(lower):
			p.Add(path, "%q is one of ReACT's own keys, which never reach Triton", h)
		case strings.HasSuffix(lower, "-bin"):
			p.Add(path, "%q: binary (-bin) metadata cannot come from an HTTP header", h)
		default:
			if j, dup := seen[lower]; dup {
				p.Add(path, "%q is also triton.forward_headers[%d]", h, j)
			} else {
				seen[lower] = i
			}
		}
	}
}

// isHeaderName reports whether s is an HTTP field name (RFC 9110 token).
func isHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch >= 'a' && ch <= 'z', ch >= 'A' && ch <= 'Z', ch >= '0' && ch <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", ch) >= 0:
		default:
			return false
		}
	}
	return true
}
