package passthrough

import (
	"context"
	"crypto/tls"
	"fmt"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"
)

// upstreamTransport is the HTTP transport to Triton: like
// http.DefaultTransport, but it never goes through an HTTP proxy from the
// environment, never asks for compression the client did not ask for (so
// bodies pass as they are), keeps enough idle connections for a busy
// client's concurrency (the default keeps 2 per host, so a client with more
// requests in flight would open a new connection for most of them), and
// closes them after upstreamIdleTimeout.
func upstreamTransport(tlsCfg *tls.Config) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = tlsCfg
	t.Proxy = nil
	t.DisableCompression = true
	t.MaxIdleConns = 1024
	t.MaxIdleConnsPerHost = 1024
	t.IdleConnTimeout = upstreamIdleTimeout
	return t
}

// upstreamIdleTimeout is how long a connection to Triton stays open
// unused. Triton's graceful shutdown waits, up to its exit timeout (30 s by
// default), for every open HTTP connection to close: with the transport's
// default of 90 s, one idle connection of the sidecar made Triton wait the
// full 30 s instead of about 4. A connection a second idle is closed; a
// busy client keeps its connections.
const upstreamIdleTimeout = time.Second

// forwardingHeaders are the headers httputil.ReverseProxy removes from the
// outgoing request before calling Rewrite.
var forwardingHeaders = []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"}

// NewHTTPProxy returns a handler that relays every request to the Triton
// HTTP endpoint at target (host:port), with the path, query, headers and
// body unchanged, binary tensor bodies (Inference-Header-Content-Length)
// included, except that the peer's address is appended to
// X-Forwarded-For; it streams each response back as it arrives. An
// unreachable upstream answers 502 Bad Gateway, without its address
// (errLog gets the details), and a request body that did not arrive within
// the server's read timeout 408. ReACT's own headers, and the private ones
// that private returns for each request (nil: none), never reach Triton.
// intercept may be nil; errLog receives proxy errors (nil: the standard
// logger). tlsCfg, when not nil, makes the upstream HTTPS.
func NewHTTPProxy(target string, tlsCfg *tls.Config, intercept HTTPInterceptor, private func() *PrivateKeys, errLog *log.Logger) (http.Handler, error) {
	scheme := "http"
	if tlsCfg != nil {
		scheme = "https"
	}
	u, err := url.Parse(scheme + "://" + target)
	if err != nil || u.Host == "" || u.Path != "" {
		return nil, fmt.Errorf("http proxy: bad upstream address %q: want host:port", target)
	}
	return newHTTPProxy(u, upstreamTransport(tlsCfg), intercept, private, errLog), nil
}

// newHTTPProxy is NewHTTPProxy's handler, relaying to the upstream at u
// through transport.
func newHTTPProxy(u *url.URL, transport http.RoundTripper, intercept HTTPInterceptor, private func() *PrivateKeys, errLog *log.Logger) http.Handler {
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			// ReverseProxy drops query parameters it cannot parse (with ';'
			// or bad escapes) before Rewrite: restore the query as sent.
			r.Out.URL.RawQuery = r.In.URL.RawQuery
			// Be transparent: keep the client's Host, and the forwarding
			// headers it sent, which ReverseProxy strips before Rewrite;
			// append the peer to X-Forwarded-For, as a proxy does.
			r.Out.Host = r.In.Host
			for _, k := range forwardingHeaders {
				if v, ok := r.In.Header[k]; ok {
					r.Out.Header[k] = v
				}
			}
			if v := forwardedFor(r.In.Header["X-Forwarded-For"], hostOf(r.In.RemoteAddr)); v != "" {
				r.Out.Header["X-Forwarded-For"] = []string{v}
			}
			// ReACT's own headers, and the private ones, never reach
			// Triton.
			var keys *PrivateKeys
			if private != nil {
				keys = private()
			}
			for k := range r.Out.Header {
				if keys.private(k) {
					delete(r.Out.Header, k)
				}
			}
		},
		Transport: inMemoryBodies{transport},
		// FlushInterval is left at 0: ReverseProxy flushes every write of
		// a response of server-sent events (Triton's generate_stream) and
		// of one of unknown length (chunked) by itself. -1 flushed the
		// others too, from a timer's goroutine started for each response,
		// which also sent the headers in a write of their own.
		BufferPool: copyBuffers{},
		ErrorLog:   errLog,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if IsReadTimeout(err) || (r.Context().Err() != nil && bodyTimedOut(r)) {
				// The client's body stopped coming before
				// server.read_timeout (which also cancelled the request's
				// context): it is still there to be told.
				WriteHTTPError(w, http.StatusRequestTimeout, "sidecar: "+ErrReadTimeout.Error())
				return
			}
			if r.Context().Err() != nil {
				// The client went away (disconnected or cancelled): not an
				// upstream failure, and nobody is left to answer.
				return
			}
			if errLog != nil {
				errLog.Printf("sidecar: http %s %s: upstream Triton %s: %v", r.Method, r.URL.Path, u.Host, err)
			}
			WriteHTTPError(w, http.StatusBadGateway, "sidecar: upstream Triton is unavailable")
		},
	}
	// The body is watched for the server's read timeout: when it strikes,
	// the request's context is cancelled too, and the proxy's error may
	// say only that.
	// A body already in memory (SetBody) is not: it was read.
	pass := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody && r.GetBody == nil {
			b := &watchedBody{ReadCloser: r.Body, timedOut: make(chan struct{})}
			r = r.WithContext(context.WithValue(r.Context(), watchedBodyKey{}, b))
			r.Body = b
		}
		rp.ServeHTTP(w, r)
	})
	if intercept == nil {
		return pass
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := intercept(r, pass); h != nil {
			h.ServeHTTP(w, r)
			return
		}
		pass.ServeHTTP(w, r)
	})
}
