package server_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/frontdoor"
	"github.com/mergectl/react-triton/sidecar/internal/sidecartest"
	"github.com/mergectl/react-triton/sidecar/metrics"
	"github.com/mergectl/react-triton/sidecar/server"
)

// limits returns the default server limits changed by edit.
func serverConfig(edit func(*config.Server)) config.Server {
	c := config.Default().Server
	edit(&c)
	return c
}

// rawHTTP sends raw bytes on a new connection to addr and returns it.
func rawHTTP(t *testing.T, addr, request string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if request != "" {
		if _, err := io.WriteString(c, request); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// closedWithin reports how long the server took to close c (reading and
// discarding whatever it sends), failing the test beyond max.
func closedWithin(t *testing.T, c net.Conn, max time.Duration) (time.Duration, string) {
	t.Helper()
	start := time.Now()
	c.SetReadDeadline(start.Add(max))
	got, err := io.ReadAll(c)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("the connection was not closed within %v (%v), after %q", max, err, got)
	}
	return took, string(got)
}

// TestHTTPHeaderLimit: headers over server.max_header_bytes get 431 with a
// JSON error, and never reach Triton; headers within pass. Far larger
// headers get Go's own 431.
func TestHTTPHeaderLimit(t *testing.T) {
	m := metrics.New()
	s, u := sidecartest.StartRecorded(t, server.Config{Server: serverConfig(func(c *config.Server) { c.MaxHeaderBytes = 2 * config.KiB }), Metrics: m})
	base := "http://" + s.HTTPAddr().String()
	for _, path := range []string{"/v2/models/m/generate", "/v2/health/ready"} {
		resp, body := sidecartest.HTTPDo(t, http.MethodPost, base+path, nil, map[string]string{"Cookie": strings.Repeat("c", 1500)})
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s with 1.5 KB of cookie: %d %s", path, resp.StatusCode, body)
		}
		resp, body = sidecartest.HTTPDo(t, http.MethodPost, base+path, nil, map[string]string{"Cookie": strings.Repeat("c", 2100)})
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge || !strings.Contains(string(body), "server.max_header_bytes (2048)") {
			t.Errorf("%s with 2.1 KB of cookie: %d %s, want 431", path, resp.StatusCode, body)
		}
		// Many small headers count as much as one large one.
		hdr := map[string]string{}
		for i := range 60 {
			hdr[fmt.Sprintf("X-H%d", i)] = "v"
		}
		if resp, body := sidecartest.HTTPDo(t, http.MethodPost, base+path, nil, hdr); resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("%s with 60 small headers (%d bytes counted): %d %s, want 431", path, 60*(len("X-H10")+1+32), resp.StatusCode, body)
		}
	}
	// Go's server reads the limit and 4 KiB more before it answers 431
	// itself; within that, the sidecar answers.
	resp, body := sidecartest.HTTPDo(t, http.MethodGet, base+"/v2/health/ready", nil, map[string]string{"Cookie": strings.Repeat("c", 5000)})
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge || !strings.Contains(string(body), "max_header_bytes") {
		t.Errorf("5 KB of cookie: %d %s, want 431", resp.StatusCode, body)
	}
	if _, h := u.Calls(); h != 2 {
		t.Errorf("%d requests reached Triton, want the 2 within the limit", h)
	}
	if got, _ := sidecartest.MetricValue(sidecartest.Scrape(t, m.Handler()), "react_rejected_requests_total", map[string]string{"protocol": "http", "reason": "headers_too_large"}); got != 5 {
		t.Errorf("react_rejected_requests_total{http,headers_too_large} = %v, want 5", got)
	}
}

// TestHTTPReadHeaderTimeout: a connection that sends no request, or only
// part of its headers, is closed at server.read_header_timeout.
func TestHTTPReadHeaderTimeout(t *testing.T) {
	s, u := sidecartest.StartRecorded(t, server.Config{Server: serverConfig(func(c *config.Server) { c.ReadHeaderTimeout = 300 * time.Millisecond })})
	for _, req := range []string{"", "POST /v2/models/m/infer HTTP/1.1\r\nHost: x\r\nX-Slow: "} {
		c := rawHTTP(t, s.HTTPAddr().String(), req)
		took, _ := closedWithin(t, c, 5*time.Second)
		if took < 250*time.Millisecond || took > 2*time.Second {
			t.Errorf("request %q: closed after %v, want about 300ms", req, took)
		}
	}
	if _, h := u.Calls(); h != 0 {
		t.Errorf("%d requests reached Triton", h)
	}
}

// TestHTTPReadTimeout: a body that stops coming is answered 408 at
// server.read_timeout, passed through or checked by the sidecar (an infer
// request, for any model).
func TestHTTPReadTimeout(t *testing.T) {
	h := sidecartest.StartHarness(t, nil)
	lim := serverConfig(func(c *config.Server) { c.ReadTimeout = 400 * time.Millisecond })
	s := sidecartest.StartSidecar(t, server.Config{TritonGRPC: h.Fake.Addr, TritonHTTP: h.FakeHTTP, Server: lim,
		InterceptGRPC: h.Models.GRPCInterceptor(), InterceptHTTP: h.Models.HTTPInterceptor()})
	pass, _ := sidecartest.StartRecorded(t, server.Config{Server: lim})
	for _, tt := range []struct {
		addr, path string
	}{
		{s.HTTPAddr().String(), "/v2/models/multi/infer"},   // controllable
		{s.HTTPAddr().String(), "/v2/models/head_a/infer"},  // checked, then passed
		{pass.HTTPAddr().String(), "/v2/models/m/generate"}, // passed as it comes
	} {
		c := rawHTTP(t, tt.addr, "POST "+tt.path+" HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"inputs\":")
		took, got := closedWithin(t, c, 5*time.Second)
		if !strings.HasPrefix(got, "HTTP/1.1 408") || took < 300*time.Millisecond || took > 3*time.Second {
			t.Errorf("%s: after %v got %q, want 408 at about 400ms", tt.path, took, got)
		}
	}
	// A request that takes its time but arrives within the bound is served.
	c := rawHTTP(t, pass.HTTPAddr().String(), "POST /v2/models/m/generate HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nab")
	time.Sleep(100 * time.Millisecond)
	io.WriteString(c, "cd")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("a slow body within the bound: %v, %v", resp, err)
	}
}

// TestHTTPIdleTimeout: a kept-alive connection with no request is closed
// at server.idle_timeout.
func TestHTTPIdleTimeout(t *testing.T) {
	s, _ := sidecartest.StartRecorded(t, server.Config{Server: serverConfig(func(c *config.Server) { c.IdleTimeout = 300 * time.Millisecond })})
	c := rawHTTP(t, s.HTTPAddr().String(), "GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%v %v", resp, err)
	}
	io.Copy(io.Discard, resp.Body)
	start := time.Now()
	c.SetReadDeadline(start.Add(5 * time.Second))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("kept-alive connection: %v, want it closed", err)
	}
	if took := time.Since(start); took < 250*time.Millisecond || took > 2*time.Second {
		t.Errorf("closed after %v, want about 300ms", took)
	}
}

// bigUpstream answers every HTTP request with n bytes.
type bigUpstream int

func (n bigUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	chunk := make([]byte, 1<<20)
	for left := int(n); left > 0; left -= len(chunk) {
		if _, err := w.Write(chunk[:min(left, len(chunk))]); err != nil {
			return
		}
	}
}

// TestHTTPWriteTimeout: a client that stops reading a response has its
// connection closed at server.write_timeout; one that reads slowly gets
// the whole response.
func TestHTTPWriteTimeout(t *testing.T) {
	const size = 256 << 20 // more than any socket buffers hold
	up := sidecartest.StartUpstreamHTTP(t, bigUpstream(size))
	s := sidecartest.StartSidecar(t, server.Config{TritonHTTP: up, Server: serverConfig(func(c *config.Server) { c.WriteTimeout = 300 * time.Millisecond })})
	lis := s.HTTPListener().(interface{ Open() int })
	c := rawHTTP(t, s.HTTPAddr().String(), "GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
	// Timed from the accept: until then the listener counts no connection,
	// and an unaccepted one is not "closed".
	sidecartest.WaitFor(t, 10*time.Second, "the sidecar accepting the connection", func() bool { return lis.Open() == 1 })
	start := time.Now()
	sidecartest.WaitFor(t, 10*time.Second, "the sidecar closing a connection that does not read", func() bool { return lis.Open() == 0 })
	if took := time.Since(start); took < 250*time.Millisecond {
		t.Errorf("closed after %v, before the write timeout", took)
	}
	c.Close()

	// Reading at a modest pace, the whole response comes, however long it
	// takes in all.
	up2 := sidecartest.StartUpstreamHTTP(t, bigUpstream(4<<20))
	s2 := sidecartest.StartSidecar(t, server.Config{TritonHTTP: up2, Server: serverConfig(func(c *config.Server) { c.WriteTimeout = 300 * time.Millisecond })})
	resp, err := http.Get("http://" + s2.HTTPAddr().String() + "/big")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	n, buf := 0, make([]byte, 256<<10)
	deadline := time.Now().Add(time.Second) // longer than the write timeout
	for {
		k, err := resp.Body.Read(buf)
		n += k
		if err != nil {
			break
		}
		if time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if n != 4<<20 {
		t.Errorf("a slow reader got %d bytes, want %d", n, 4<<20)
	}
}

// TestConnectionCap: a listener with server.max_connections open closes
// the next connection at once, counts it, and accepts again once one
// closes. Both listeners.
func TestConnectionCap(t *testing.T) {
	m := metrics.New()
	s, _ := sidecartest.StartRecorded(t, server.Config{Metrics: m, Server: serverConfig(func(c *config.Server) { c.MaxConnections = 2 })})
	for _, l := range []struct {
		name string
		addr string
		lis  net.Listener
	}{{"http", s.HTTPAddr().String(), s.HTTPListener()}, {"grpc", s.GRPCAddr().String(), s.GRPCListener()}} {
		a := rawHTTP(t, l.addr, "")
		rawHTTP(t, l.addr, "")
		sidecartest.WaitFor(t, 5*time.Second, "two connections open", func() bool { return l.lis.(interface{ Open() int }).Open() == 2 })
		third := rawHTTP(t, l.addr, "")
		if took, _ := closedWithin(t, third, 2*time.Second); took > time.Second {
			t.Errorf("%s: the third connection was closed after %v", l.name, took)
		}
		if got, _ := sidecartest.MetricValue(sidecartest.Scrape(t, m.Handler()), "react_connections_refused_total", map[string]string{"listener": l.name}); got != 1 {
			t.Errorf("%s: react_connections_refused_total = %v, want 1", l.name, got)
		}
		a.Close()
		sidecartest.WaitFor(t, 5*time.Second, "a connection closed", func() bool { return l.lis.(interface{ Open() int }).Open() == 1 })
		again := rawHTTP(t, l.addr, "")
		again.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		if _, err := again.Read(make([]byte, 1)); err == io.EOF {
			t.Errorf("%s: a connection after one closed was refused", l.name)
		}
		if got, _ := sidecartest.MetricValue(sidecartest.Scrape(t, m.Handler()), "react_connections", map[string]string{"listener": l.name}); got != 2 {
			t.Errorf("%s: react_connections = %v, want 2", l.name, got)
		}
	}
}

// TestHTTPHeadersBeyondBoundNotRead: headers far beyond
// server.max_header_bytes (more than the 4 KiB more that Go reads) are
// answered 431 at once, the connection closed, without waiting for the end
// of the header section: the server does not hold a megabyte of headers a
// connection.
func TestHTTPHeadersBeyondBoundNotRead(t *testing.T) {
	s, u := sidecartest.StartRecorded(t, server.Config{Server: serverConfig(func(c *config.Server) { c.MaxHeaderBytes = 2 * config.KiB })})
	// 32 KiB of a cookie, and the header section never ends.
	c := rawHTTP(t, s.HTTPAddr().String(), "GET /v2/health/ready HTTP/1.1\r\nHost: x\r\nCookie: "+strings.Repeat("c", 32<<10))
	// The server closes with our bytes unread: the 431 may be followed by
	// a reset rather than an end of file.
	start := time.Now()
	c.SetReadDeadline(start.Add(3 * time.Second))
	got, err := io.ReadAll(c)
	if took := time.Since(start); !strings.HasPrefix(string(got), "HTTP/1.1 431") || took > 2*time.Second || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("after %v: %q (%v), want 431 at once", took, got, err)
	}
	if _, h := u.Calls(); h != 0 {
		t.Errorf("%d requests reached Triton", h)
	}
}

// TestHTTPWriteDeadlineLiftedWhenIdle: a kept-alive connection idle for
// longer than server.write_timeout still gets the answers Go's server
// writes itself, before any handler (here a 400 to a malformed request):
// the write deadline of the last response does not outlive it.
func TestHTTPWriteDeadlineLiftedWhenIdle(t *testing.T) {
	s, _ := sidecartest.StartRecorded(t, server.Config{Server: serverConfig(func(c *config.Server) { c.WriteTimeout = 100 * time.Millisecond })})
	c := rawHTTP(t, s.HTTPAddr().String(), "GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%v %v", resp, err)
	}
	io.Copy(io.Discard, resp.Body)
	time.Sleep(400 * time.Millisecond)
	io.WriteString(c, "NOT A REQUEST\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	got, _ := io.ReadAll(br)
	if !strings.HasPrefix(string(got), "HTTP/1.1 400") {
		t.Errorf("a malformed request after %v idle: %q, want Go's 400", 400*time.Millisecond, got)
	}
}

// TestLimitListenerUnbounded: a bound of 0 or less bounds nothing, and
// still counts the connections open.
func TestLimitListenerUnbounded(t *testing.T) {
	for _, max := range []int{0, -1} {
		inner, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		// A bound that refuses would close each connection and wait for
		// the next: fail rather than wait.
		inner.(*net.TCPListener).SetDeadline(time.Now().Add(5 * time.Second))
		l := frontdoor.LimitListener(inner, "test", max, nil).(interface {
			net.Listener
			Open() int
		})
		var conns []net.Conn
		for range 3 {
			c := rawHTTP(t, l.Addr().String(), "")
			defer c.Close()
			a, err := l.Accept()
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, a)
		}
		if l.Open() != 3 {
			t.Errorf("max %d: %d open, want 3", max, l.Open())
		}
		for _, a := range conns {
			a.Close()
			a.Close() // counted out once
		}
		if l.Open() != 0 {
			t.Errorf("max %d: %d open after closing all, want 0", max, l.Open())
		}
		l.Close()
	}
}

// TestServerLimitsDefaults: a Config built by hand gets the default bounds
// for what it leaves at zero among the keys that must be positive, and
// keeps what it sets and the zeros that mean "no bound".
func TestServerLimitsDefaults(t *testing.T) {
	d := config.Default().Server
	if got := frontdoor.ServerLimits(config.Server{}); got != d {
		t.Errorf("ServerLimits(zero) = %+v, want the defaults %+v", got, d)
	}
	got := frontdoor.ServerLimits(config.Server{MaxConnections: 5, WriteTimeout: time.Second})
	want := config.Server{
		MaxConnections:    5,
		MaxHeaderBytes:    d.MaxHeaderBytes,
		ReadHeaderTimeout: d.ReadHeaderTimeout,
		WriteTimeout:      time.Second,
		GRPC: config.GRPCServer{
			MaxConcurrentStreams: d.GRPC.MaxConcurrentStreams,
			KeepaliveTime:        d.GRPC.KeepaliveTime,
			KeepaliveTimeout:     d.GRPC.KeepaliveTimeout,
		},
	}
	if got != want {
		t.Errorf("ServerLimits = %+v, want %+v", got, want)
	}
}
