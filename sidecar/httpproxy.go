package sidecar

import (
	"crypto/tls"
	"fmt"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"

	"github.com/mergectl/react-triton/control"
)

// upstreamTransport is the HTTP transport to Triton: like
// http.DefaultTransport, but it never goes through an HTTP proxy from the
// environment, never asks for compression the client did not ask for (so
// bodies pass as they are), and keeps enough idle connections for a busy
// client's concurrency (the default keeps 2 per host, so a client with more
// requests in flight would open a new connection for most of them).
func upstreamTransport(tlsCfg *tls.Config) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = tlsCfg
	t.Proxy = nil
	t.DisableCompression = true
	t.MaxIdleConns = 1024
	t.MaxIdleConnsPerHost = 1024
	return t
}

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
// the server's read timeout 408. intercept may be nil; errLog receives
// proxy errors (nil: the standard logger). tlsCfg, when not nil, makes the
// upstream HTTPS.
func NewHTTPProxy(target string, tlsCfg *tls.Config, intercept HTTPInterceptor, errLog *log.Logger) (http.Handler, error) {
	scheme := "http"
	if tlsCfg != nil {
		scheme = "https"
	}
	u, err := url.Parse(scheme + "://" + target)
	if err != nil || u.Host == "" || u.Path != "" {
		return nil, fmt.Errorf("http proxy: bad upstream address %q: want host:port", target)
	}
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
			// ReACT's own headers never reach Triton.
			for k := range r.Out.Header {
				if control.IsOwnKey(k) {
					delete(r.Out.Header, k)
				}
			}
		},
		Transport: upstreamTransport(tlsCfg),
		// Flush every write: Triton's generate_stream answers with
		// server-sent events.
		FlushInterval: -1,
		ErrorLog:      errLog,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				// The client went away (disconnected or cancelled): not an
				// upstream failure, and nobody is left to answer.
				return
			}
			if isReadTimeout(err) {
				// The client's body stopped within server.read_timeout.
				writeHTTPError(w, http.StatusRequestTimeout, "sidecar: "+errReadTimeout.Error())
				return
			}
			if errLog != nil {
				errLog.Printf("sidecar: http %s %s: upstream Triton %s: %v", r.Method, r.URL.Path, target, err)
			}
			writeHTTPError(w, http.StatusBadGateway, "sidecar: upstream Triton is unavailable")
		},
	}
	if intercept == nil {
		return rp, nil
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := intercept(r, rp); h != nil {
			h.ServeHTTP(w, r)
			return
		}
		rp.ServeHTTP(w, r)
	}), nil
}
