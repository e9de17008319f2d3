package passthrough

import (
	"bytes"
	"io"
	"net/http"
	"sync"
	"time"
)

// SetBody replaces the body of r, a request an interceptor read before
// passing it on, with b: the proxy then sends it from memory, in the same
// write as the request's headers (a body it reads from the client, it
// sends after them, as the body arrives).
func SetBody(r *http.Request, b []byte) {
	r.Body = io.NopCloser(bytes.NewReader(b))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	r.ContentLength = int64(len(b))
	r.TransferEncoding = nil
}

// inMemoryBodies sends a request whose body is in memory (SetBody: GetBody
// set) from a fresh reader of it, so that net/http writes the headers and
// the body in one write: it does that for the in-memory readers it knows,
// and ReverseProxy hands every body on wrapped in a reader of its own.
// Other requests go as they are.
type inMemoryBodies struct{ http.RoundTripper }

// RoundTrip implements http.RoundTripper.
func (t inMemoryBodies) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.GetBody != nil && r.Body != nil && r.Body != http.NoBody {
		if body, err := r.GetBody(); err == nil {
			out := *r // RoundTrip must not change r
			out.Body = body
			r = &out
		}
	}
	return t.RoundTripper.RoundTrip(r)
}

// copyBuffer is the size of the buffers a response's body is copied
// through, as ReverseProxy allocates one for each response without a pool.
const copyBuffer = 32 << 10

// copyBuffers is the proxy's httputil.BufferPool.
type copyBuffers struct{}

var copyBufferPool = sync.Pool{New: func() any { return new([copyBuffer]byte) }}

// Get implements httputil.BufferPool.
func (copyBuffers) Get() []byte { return copyBufferPool.Get().(*[copyBuffer]byte)[:] }

// Put implements httputil.BufferPool.
func (copyBuffers) Put(b []byte) {
	if len(b) == copyBuffer {
		copyBufferPool.Put((*[copyBuffer]byte)(b))
	}
}

// watchedBody is a request body that tells when a read of it failed past
// the connection's read deadline (server.read_timeout).
type watchedBody struct {
	io.ReadCloser
	once     sync.Once
	timedOut chan struct{} // closed on the first such read
}

// watchedBodyKey keys a request's *watchedBody in its context.
type watchedBodyKey struct{}

// Read implements io.Reader.
func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && IsReadTimeout(err) {
		b.once.Do(func() { close(b.timedOut) })
	}
	return n, err
}

// bodyTimedOut reports whether the body of r stopped at the read deadline.
// The deadline also cancels the request's context, and the proxy may learn
// of that first: the body's own read is given a moment to report.
func bodyTimedOut(r *http.Request) bool {
	b, ok := r.Context().Value(watchedBodyKey{}).(*watchedBody)
	if !ok {
		return false
	}
	t := time.NewTimer(100 * time.Millisecond)
	defer t.Stop()
	select {
	case <-b.timedOut:
		return true
	case <-t.C:
		return false
	}
}
