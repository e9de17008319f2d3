package sidecar

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/mergectl/react-triton/internal/testutil"
	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/internal/sidecartest"
	"github.com/mergectl/react-triton/sidecar/passthrough"
	"github.com/mergectl/react-triton/sidecar/server"
)

func TestMainUsageAndVersion(t *testing.T) {
	tests := []struct {
		args   []string
		code   int
		output string
	}{
		{[]string{"--version"}, ExitOK, "sidecar "},
		// Configuration problems, from flags as from a file, are failures
		// to start, each named with its key and origin.
		{[]string{}, ExitFailure, "config: 2 problems:\n  triton.grpc: required"},
		{[]string{"--triton-grpc", "a:1", "--triton-http", "b:2", "--nope"}, ExitUsage, "unknown flag: --nope"},
		{[]string{"--triton-grpc", "a:1", "--triton-http", "b:2", "extra"}, ExitUsage, `unknown command "extra"`},
		{[]string{"--triton-grpc", "a:1", "--triton-http", "b:2", "--shutdown-timeout", "0"}, ExitFailure, "listen.shutdown_timeout: must be positive, got 0s (from --shutdown-timeout)"},
		{[]string{"--triton-grpc", "a:1", "--triton-http", "b:2/path", "--grpc-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--metrics-listen", ""},
			ExitFailure, `triton.http: "b:2/path": port "2/path" is not a number from 1 to 65535 (from --triton-http)`},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		code := Main(tt.args, &stdout, &stderr)
		if code != tt.code || !strings.Contains(stdout.String()+stderr.String(), tt.output) {
			t.Errorf("Main(%q) = %d, output %q; want %d and %q", tt.args, code, stdout.String()+stderr.String(), tt.code, tt.output)
		}
	}
}

func TestMainListenerInUse(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	var stderr bytes.Buffer
	code := Main([]string{"--triton-grpc", "a:1", "--triton-http", "b:2", "--grpc-listen", busy.Addr().String(), "--http-listen", "127.0.0.1:0", "--metrics-listen", ""}, &stderr, &stderr)
	if code != ExitFailure || !strings.Contains(stderr.String(), "gRPC listener") {
		t.Errorf("Main = %d, %q", code, stderr.String())
	}
}

// TestShutdownEndsCallsInFlight: a stop with a call that never ends returns
// once the graceful period is over, and the upstream call is cancelled.
func TestShutdownEndsCallsInFlight(t *testing.T) {
	u := &sidecartest.RawUpstream{Cancelled: make(chan struct{})}
	up := sidecartest.StartUpstreamGRPC(t, func(*grpc.Server) {}, grpc.UnknownServiceHandler(u.Handle), grpc.ForceServerCodecV2(passthrough.Codec{}))
	s, err := server.New(server.Config{TritonGRPC: up, TritonHTTP: testutil.ClosedAddr(t), GRPCListen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0",
		ShutdownTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()

	conn := sidecartest.Dial(t, s.GRPCAddr().String())
	stream, err := sidecartest.NewRawStream(context.Background(), conn, "/x.Unknown/Hang")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Header(); err != nil {
		t.Fatal(err)
	}
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve = %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Serve did not return")
	}
	select {
	case <-u.Cancelled:
	case <-time.After(time.Minute):
		t.Fatal("the upstream call was not cancelled")
	}
}

// TestCommandPprofSwitch: the sidecar serves Go's profiles only when
// pprof.enabled is set, and then where pprof.listen says.
func TestCommandPprofSwitch(t *testing.T) {
	for _, tt := range []struct {
		enabled bool
	}{{false}, {true}} {
		if tt.enabled {
			t.Setenv(config.EnvVar("pprof.enabled"), "true")
			t.Setenv(config.EnvVar("pprof.listen"), "127.0.0.1:0")
		}
		ctx, cancel := context.WithCancel(context.Background())
		var out sidecartest.SyncBuffer
		cmd := NewCommand(ctx, nil, &out, &out)
		cmd.SetArgs([]string{"--triton-grpc", testutil.ClosedAddr(t), "--triton-http", testutil.ClosedAddr(t),
			"--grpc-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--metrics-listen", ""})
		done := make(chan error, 1)
		go func() { done <- cmd.Execute() }()
		sidecartest.WaitFor(t, 10*time.Second, "the sidecar listening", func() bool { return strings.Contains(out.String(), "sidecar listening") })
		var line string
		for l := range strings.Lines(out.String()) {
			if strings.Contains(l, "sidecar listening") {
				line = l
			}
		}
		_, addr, served := strings.Cut(line, " pprof=")
		if served != tt.enabled {
			t.Errorf("pprof.enabled %v: %q, want profiles served: %v", tt.enabled, line, tt.enabled)
		}
		if served {
			addr, _, _ = strings.Cut(addr, " ")
			resp, err := http.Get("http://" + addr + "/debug/pprof/")
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Errorf("profiles at %s: %v %v", addr, resp, err)
			} else {
				resp.Body.Close()
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("pprof.enabled %v: %v; output %s", tt.enabled, err, out.String())
		}
	}
}
