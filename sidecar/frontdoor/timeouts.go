package frontdoor

import (
	"net"
	"net/http"
	"time"
)

// writeChunk is the most one write to an HTTP client may carry under the
// write timeout: a longer write is split, each part with its own deadline,
// so that the timeout bounds a client that stops reading, not a large
// response read at a modest rate.
const writeChunk = 64 << 10

// limitWrites wraps next so that every write of the response to the client
// must finish within d of its start (server.write_timeout). A client that
// stops reading makes a write fail once d passes; the connection is then
// closed. The response may take as long as it flows: a long stream of
// server-sent events is not cut. d ≤ 0 returns next.
//
// Go's own Server.WriteTimeout bounds the whole response from the end of
// the request's headers, the upstream's inference time included, which
// would cut long inferences and streams; a deadline per write does not.
func limitWrites(d time.Duration, next http.Handler) http.Handler {
	if d <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tw := &timedWriter{ResponseWriter: w, rc: http.NewResponseController(w), d: d}
		// A deadline left by the last response on this connection must not
		// fail this one's first write (a 100 Continue, say).
		tw.rc.SetWriteDeadline(time.Time{})
		next.ServeHTTP(tw, r)
		// What the server writes after the handler returns (the buffered
		// rest, the last chunk) gets a deadline of its own;
		// ClearWriteDeadline lifts it once the connection is idle.
		tw.extend()
	})
}

// timedWriter sets the connection's write deadline before each write.
type timedWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
	d  time.Duration
}

func (t *timedWriter) extend() { t.rc.SetWriteDeadline(time.Now().Add(t.d)) }

// Write writes p in parts of at most writeChunk, each within the timeout.
func (t *timedWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		k := min(len(p), writeChunk)
		t.extend()
		m, err := t.ResponseWriter.Write(p[:k])
		n += m
		if err != nil {
			return n, err
		}
		p = p[k:]
	}
	return n, nil
}

// WriteHeader writes the status line, within the timeout when it goes out
// at once (an informational answer).
func (t *timedWriter) WriteHeader(code int) {
	t.extend()
	t.ResponseWriter.WriteHeader(code)
}

// Flush flushes what is buffered, within the timeout.
func (t *timedWriter) Flush() {
	t.extend()
	t.rc.Flush()
}

// Unwrap gives http.ResponseController the writer underneath.
func (t *timedWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// ClearWriteDeadline is the HTTP server's ConnState hook: a connection
// that went idle has its write deadline lifted, so that a kept-alive
// connection's next request starts with none (the server writes some
// answers itself, such as a 431, before any handler runs).
func ClearWriteDeadline(c net.Conn, state http.ConnState) {
	if state == http.StateIdle {
		c.SetWriteDeadline(time.Time{})
	}
}
