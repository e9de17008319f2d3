package frontdoor

import (
	"net"
	"sync"
	"sync/atomic"

	"github.com/mergectl/react-triton/sidecar/metrics"
)

// capListener bounds the connections open at once through a listener: a
// connection accepted beyond max is closed at once (the client sees a
// reset or an immediate end of file and may try again), so that idle or
// slow clients cannot take an unbounded number of goroutines, buffers and
// file descriptors. Open connections are counted until they are closed.
type capListener struct {
	net.Listener
	name    string // the listener, in metrics
	max     int64
	open    atomic.Int64
	metrics *metrics.Metrics // may be nil
}

// LimitListener returns l bounded to max open connections (max ≤ 0: no
// bound, but still counted).
func LimitListener(l net.Listener, name string, max int, m *metrics.Metrics) net.Listener {
	return &capListener{Listener: l, name: name, max: int64(max), metrics: m}
}

// Accept returns the next connection within the bound, closing those
// beyond it.
func (l *capListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if n := l.open.Add(1); l.max > 0 && n > l.max {
			l.open.Add(-1)
			// Counted before the close, so that whoever sees the close
			// also sees the count.
			if l.metrics != nil {
				l.metrics.ConnectionRefused(l.name)
			}
			c.Close()
			continue
		}
		if l.metrics != nil {
			l.metrics.ConnectionOpened(l.name)
		}
		return &capConn{Conn: c, l: l}, nil
	}
}

// Open returns the number of connections open through the listener.
func (l *capListener) Open() int { return int(l.open.Load()) }

// capConn is a connection counted by its capListener until closed.
type capConn struct {
	net.Conn
	l    *capListener
	once sync.Once
}

// Close closes the connection and counts it out, once.
func (c *capConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.open.Add(-1)
		if c.l.metrics != nil {
			c.l.metrics.ConnectionClosed(c.l.name)
		}
	})
	return err
}
