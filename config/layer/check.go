package layer

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/mergectl/react-triton/problem"
)

// The checks of values that several configurations hold alike: Triton's
// address, a model version, a duration.

// versionPattern is a model version: a positive decimal integer.
var versionPattern = regexp.MustCompile(`^[1-9][0-9]*$`)

// CheckVersion checks a model version: "" or a positive integer.
func CheckVersion(p *problem.List, path, v string) {
	if v == "" {
		return
	}
	if !versionPattern.MatchString(v) {
		p.Add(path, "%q: want a positive integer, or leave it out for Triton's choice", v)
		return
	}
	if _, err := strconv.ParseInt(v, 10, 64); err != nil {
		p.Add(path, "%q: too large", v)
	}
}

// NonNegative checks a duration that may be 0 but not negative.
func NonNegative(p *problem.List, path string, d time.Duration) {
	if d < 0 {
		p.Add(path, "must not be negative, got %v", d)
	}
}

// CheckAddr checks a host:port address and returns what is wrong with it,
// or "". A listening address may leave the host out and use port 0; an
// upstream one must have both.
func CheckAddr(addr string, listen bool) string {
	if strings.Contains(addr, "://") {
		return fmt.Sprintf("%q: want host:port without a scheme", addr)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		reason := err.Error()
		var aerr *net.AddrError
		if errors.As(err, &aerr) {
			reason = aerr.Err
		}
		return fmt.Sprintf("%q: want host:port (%s)", addr, reason)
	}
	if !listen && host == "" {
		return fmt.Sprintf("%q: want host:port with a host, such as 127.0.0.1%s", addr, addr)
	}
	n, err := strconv.Atoi(port)
	low := 1
	if listen {
		low = 0
	}
	if err != nil || n < low || n > 65535 || port[0] == '+' || port[0] == '-' {
		return fmt.Sprintf("%q: port %q is not a number from %d to 65535", addr, port, low)
	}
	return ""
}
