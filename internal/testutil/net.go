package testutil

import (
	"net"
	"testing"
)

// ClosedAddr returns a loopback address, host:port, that nothing listens
// on: a port the kernel handed out and that was closed again, for a test
// of a client whose server is gone.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	return addr
}
