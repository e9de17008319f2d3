package passthrough

import (
	"regexp"
	"strings"
	"sync/atomic"
	"time"
)

// addrPattern matches what looks like a network address in an error
// message: an IPv4 address or a bracketed IPv6 one, with or without a
// port.
var addrPattern = regexp.MustCompile(`\[[0-9A-Fa-f:.%]+\](:\d+)?|\b\d{1,3}(\.\d{1,3}){3}(:\d+)?\b`)

// Redactor removes the upstream Triton's addresses from messages that
// reach clients: Triton's internal address (and the addresses of the
// sidecar's own connections to it, in the messages of a failed dial or a
// reset) tell an attacker where to go next. The full message goes to the
// log.
type Redactor struct {
	hosts []*regexp.Regexp // the configured upstream host names, as words, with their ports
}

// NewRedactor returns a redactor for the upstream addresses (host:port).
func NewRedactor(upstream ...string) *Redactor {
	r := &Redactor{}
	for _, a := range upstream {
		h := hostOf(a)
		if h == "" || strings.Contains(h, ":") || addrPattern.MatchString(h) {
			continue // an IP address: addrPattern covers it
		}
		r.hosts = append(r.hosts, regexp.MustCompile(`\b`+regexp.QuoteMeta(h)+`(:\d+)?\b`))
	}
	return r
}

// Redact returns msg with every address replaced by "[triton]": the
// upstream host names (with their ports), and any IP address.
func (r *Redactor) Redact(msg string) string {
	if r != nil {
		for _, re := range r.hosts {
			msg = re.ReplaceAllString(msg, "[triton]")
		}
	}
	return addrPattern.ReplaceAllString(msg, "[triton]")
}

// LogLimit lets through one log line a second, so that an outage of
// Triton under load logs its cause without flooding the log.
type LogLimit struct{ last atomic.Int64 }

// Do runs f unless it ran less than a second ago.
func (l *LogLimit) Do(f func()) {
	now := time.Now().UnixNano()
	last := l.last.Load()
	if now-last < int64(time.Second) || !l.last.CompareAndSwap(last, now) {
		return
	}
	f()
}
