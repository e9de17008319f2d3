package config

import (
	"strings"

	"github.com/mergectl/react-triton/control"
)

// minKeepaliveTime is the shortest server.grpc.keepalive_time grpc-go
// accepts (it raises shorter ones silently).
const minKeepaliveTime = 1e9 // 1s

func (c *Config) validateServer(p *problems) {
	s := &c.Server
	if s.MaxConnections < 1 {
		p.add("server.max_connections", "must be at least 1, got %d", s.MaxConnections)
	}
	if s.MaxHeaderBytes < KiB || s.MaxHeaderBytes > MaxHeaderBytesLimit {
		p.add("server.max_header_bytes", "must be between 1KiB and %v, got %v", MaxHeaderBytesLimit, s.MaxHeaderBytes)
	}
	if s.ReadHeaderTimeout <= 0 {
		p.add("server.read_header_timeout", "must be positive, got %v", s.ReadHeaderTimeout)
	}
	nonNegative(p, "server.read_timeout", s.ReadTimeout)
	nonNegative(p, "server.write_timeout", s.WriteTimeout)
	nonNegative(p, "server.idle_timeout", s.IdleTimeout)

	g := &s.GRPC
	if g.MaxConcurrentStreams < 1 {
		p.add("server.grpc.max_concurrent_streams", "must be at least 1, got %d", g.MaxConcurrentStreams)
	}
	if g.KeepaliveTime < minKeepaliveTime {
		p.add("server.grpc.keepalive_time", "must be at least 1s, got %v", g.KeepaliveTime)
	}
	if g.KeepaliveTimeout <= 0 {
		p.add("server.grpc.keepalive_timeout", "must be positive, got %v", g.KeepaliveTimeout)
	}
	nonNegative(p, "server.grpc.keepalive_min_time", g.KeepaliveMinTime)

	t := &s.TLS
	files := []struct{ key, path string }{
		{"cert_file", t.CertFile}, {"key_file", t.KeyFile}, {"client_ca_file", t.ClientCAFile},
	}
	if !t.Enabled {
		for _, f := range files {
			if f.path != "" {
				p.add("server.tls."+f.key, "set while TLS is off: set server.tls.enabled: true to use it, or remove it")
			}
		}
		if t.Metrics {
			p.add("server.tls.metrics", "set while TLS is off: set server.tls.enabled: true to use it, or remove it")
		}
		return
	}
	if t.CertFile == "" {
		p.add("server.tls.cert_file", "required with TLS on: the server's certificate (PEM)")
	}
	if t.KeyFile == "" {
		p.add("server.tls.key_file", "required with TLS on: the certificate's private key (PEM)")
	}
	for _, f := range files {
		if f.path != "" {
			if msg := checkFile(f.path); msg != "" {
				p.add("server.tls."+f.key, "%s", msg)
			}
		}
	}
	if t.Metrics && c.Listen.Metrics == "" {
		p.add("server.tls.metrics", "set while listen.metrics is off")
	}
}

func (c *Config) validateManagement(p *problems) {
	m := &c.Management
	seen := map[string]int{}
	for i, name := range m.Allow {
		path := indexPath("management.allow", i)
		if !IsManagementCall(name) {
			names := make([]string, len(ManagementCalls))
			for j, mc := range ManagementCalls {
				names[j] = mc.Name
			}
			if s := suggest(name, names); s != "" {
				p.add(path, "%q is not a management call, did you mean %q?", name, s)
			} else {
				p.add(path, "%q is not a management call (want one of: %s)", name, strings.Join(names, ", "))
			}
			continue
		}
		if j, dup := seen[name]; dup {
			p.add(path, "%q is also management.allow[%d]", name, j)
			continue
		}
		seen[name] = i
	}
	if m.TokenFile == "" {
		return
	}
	if len(m.Allow) == 0 {
		p.add("management.token_file", "set while no management call is allowed: list the calls under management.allow, or remove it")
	}
	if msg := checkFile(m.TokenFile); msg != "" {
		p.add("management.token_file", "%s", msg)
		return
	}
	if _, err := ReadTokens(m.TokenFile); err != nil {
		p.add("management.token_file", "%v", err)
	}
}

func (c *Config) validatePprof(p *problems) {
	pp := &c.Pprof
	if pp.MaxSeconds < 1 {
		p.add("pprof.max_seconds", "must be at least 1, got %d", pp.MaxSeconds)
	}
	if !pp.Enabled {
		return
	}
	if pp.Listen == "" {
		p.add("pprof.listen", "required with pprof on: where to serve the profiles, host:port")
		return
	}
	if msg := checkAddr(pp.Listen, true); msg != "" {
		p.add("pprof.listen", "%s", msg)
		return
	}
	for _, a := range []struct{ path, addr string }{
		{"listen.grpc", c.Listen.GRPC}, {"listen.http", c.Listen.HTTP}, {"listen.metrics", c.Listen.Metrics},
	} {
		if a.addr != "" && checkAddr(a.addr, true) == "" && sameSocket(a.addr, pp.Listen) {
			p.add("pprof.listen", "%q is also %s: the listeners need different ports", pp.Listen, a.path)
		}
	}
}

// validateForwardHeaders checks triton.forward_headers: header names, none
// twice, none of ReACT's own keys (which never reach Triton).
func (c *Config) validateForwardHeaders(p *problems) {
	seen := map[string]int{}
	for i, h := range c.Triton.ForwardHeaders {
		path := indexPath("triton.forward_headers", i)
		lower := strings.ToLower(h)
		switch {
		case !isHeaderName(h):
			p.add(path, "%q is not a header name", h)
		case control.IsOwnKey(lower):
			p.add(path, "%q is one of ReACT's own keys, which never reach Triton", h)
		case strings.HasSuffix(lower, "-bin"):
			p.add(path, "%q: binary (-bin) metadata cannot come from an HTTP header", h)
		default:
			if j, dup := seen[lower]; dup {
				p.add(path, "%q is also triton.forward_headers[%d]", h, j)
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
