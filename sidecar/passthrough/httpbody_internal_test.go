package passthrough

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/mergectl/react-triton/internal/testutil"
)

// countingConn counts the writes made on a connection into n.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.n.Add(1)
	return c.Conn.Write(p)
}

// countingListener hands out countingConns.
type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{c, l.n}, nil
}

// writeRig is the proxy between a client and an upstream that answers
// every request with its body (and a Content-Length), counting the writes
// of the proxy's connections: toUpstream on its connections to the
// upstream, toClient on the client's. A request to /read is read by the
// seam and passed on with SetBody, as the sidecar does an inference
// request; any other is relayed as the client sends it. watched records,
// for each request the transport is given, whether its body was being
// watched for the read timeout.
type writeRig struct {
	url                  string
	toUpstream, toClient atomic.Int64
	watched              []bool
	client               *http.Client
}

func newWriteRig(t testing.TB) *writeRig {
	t.Helper()
	r := &writeRig{client: &http.Client{Transport: &http.Transport{DisableCompression: true}}}
	t.Cleanup(r.client.CloseIdleConnections)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.Write(b)
	}))
	t.Cleanup(up.Close)
	u, err := url.Parse(up.URL)
	if err != nil {
		t.Fatal(err)
	}
	transport := upstreamTransport(nil)
	dialer := &net.Dialer{}
	transport.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialer.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countingConn{c, &r.toUpstream}, nil
	}
	recording := roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		_, ok := req.Context().Value(watchedBodyKey{}).(*watchedBody)
		r.watched = append(r.watched, ok) // one request at a time
		return transport.RoundTrip(req)
	})
	seam := func(req *http.Request, pass http.Handler) http.Handler {
		if req.URL.Path != "/read" {
			return nil
		}
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			b, err := io.ReadAll(req.Body)
			if err != nil {
				t.Error(err)
			}
			SetBody(req, b)
			pass.ServeHTTP(w, req)
		})
	}
	proxy := httptest.NewUnstartedServer(newHTTPProxy(u, recording, seam, nil, nil))
	proxy.Listener = countingListener{proxy.Listener, &r.toClient}
	proxy.Start()
	t.Cleanup(proxy.Close)
	r.url = proxy.URL
	return r
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// post sends body to path through the proxy and checks that the same
// bytes come back.
func (r *writeRig) post(t testing.TB, path string, body []byte) {
	t.Helper()
	resp, err := r.client.Post(r.url+path, "application/octet-stream", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !bytes.Equal(got, body) {
		t.Fatalf("%s: status %d, body %q, %v: want 200 and %q", path, resp.StatusCode, got, err, body)
	}
}

// TestHTTPProxyWrites: a request whose body the seam read (SetBody) goes
// upstream in one write, headers and body together, its body not watched
// (it was read); a response of known length reaches the client in one
// write, headers and body together. A body the proxy reads from the client
// is watched, and arrives whole.
func TestHTTPProxyWrites(t *testing.T) {
	r := newWriteRig(t)
	body := []byte(`{"inputs":[{"name":"INPUT0","shape":[1,4],"datatype":"FP32","parameters":{"binary_data_size":16}}]}` + "\x00\x00\x80\x3f\x00\x00\x00\xc0\xff\xff\xff\x7f\x00\x00\x80\xff")
	const n = 50
	for range n {
		r.post(t, "/read", body)
	}
	if got := r.toUpstream.Load(); got != n {
		t.Errorf("%d requests read by the seam took %d writes upstream, want one each", n, got)
	}
	if got := r.toClient.Load(); got != n {
		t.Errorf("%d responses took %d writes to the client, want one each", n, got)
	}
	r.post(t, "/stream", body)
	want := append(make([]bool, n), true)
	for i, w := range r.watched {
		if w != want[i] {
			t.Errorf("request %d: body watched %v, want %v (the last one's only)", i, w, want[i])
		}
	}
}

// TestHTTPProxyPoolsCopyBuffers: a relayed request allocates, client,
// proxy and upstream together, less than the 32 KiB buffer ReverseProxy
// copies a response through when it has no pool (about 16 KiB in all with
// the pool, 49 KiB without).
func TestHTTPProxyPoolsCopyBuffers(t *testing.T) {
	if testutil.RaceEnabled {
		t.Skip("allocations are not counted under the race detector")
	}
	r := newWriteRig(t)
	body := []byte("0123456789abcdef")
	r.post(t, "/stream", body) // connections opened
	const n = 100
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		r.post(t, "/stream", body)
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per >= copyBuffer {
		t.Errorf("%d bytes allocated a request, want fewer than %d", per, copyBuffer)
	}
}
