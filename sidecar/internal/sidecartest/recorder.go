package sidecartest

import (
	"io"
	"net/http"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/mergectl/react-triton/sidecar/passthrough"
	"github.com/mergectl/react-triton/sidecar/server"
)

// Recorder is an upstream Triton for the front door's tests, on both
// protocols: every gRPC call (any method, raw codec) is answered with an
// empty message, every HTTP request with 200 "upstream"; each is recorded
// with its metadata or headers, so that a test can tell what reached
// Triton.
type Recorder struct {
	mu      sync.Mutex
	methods []string
	md      []metadata.MD
	paths   []string
	headers []http.Header
}

// Handle is the upstream's grpc.StreamHandler: it records the call and
// answers it with an empty message.
func (u *Recorder) Handle(_ any, ss grpc.ServerStream) error {
	method, _ := grpc.MethodFromServerStream(ss)
	md, _ := metadata.FromIncomingContext(ss.Context())
	u.mu.Lock()
	u.methods = append(u.methods, method)
	u.md = append(u.md, md)
	u.mu.Unlock()
	var f passthrough.Frame
	if err := ss.RecvMsg(&f); err != nil && err != io.EOF {
		return err
	}
	return ss.SendMsg(&passthrough.Frame{})
}

// ServeHTTP records the request and answers 200 "upstream".
func (u *Recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	u.mu.Lock()
	u.paths = append(u.paths, r.URL.Path)
	u.headers = append(u.headers, r.Header.Clone())
	u.mu.Unlock()
	io.WriteString(w, "upstream")
}

// Calls returns how many gRPC calls and HTTP requests reached it.
func (u *Recorder) Calls() (grpcCalls, httpCalls int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.methods), len(u.paths)
}

// LastMD returns the metadata of the last gRPC call.
func (u *Recorder) LastMD() metadata.MD {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.md) == 0 {
		return nil
	}
	return u.md[len(u.md)-1]
}

// LastHeader returns the headers of the last HTTP request.
func (u *Recorder) LastHeader() http.Header {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.headers) == 0 {
		return nil
	}
	return u.headers[len(u.headers)-1]
}

// StartRecorded serves a sidecar with cfg (its Triton addresses set to a
// new recorder's) and returns both.
func StartRecorded(t *testing.T, cfg server.Config) (*server.Server, *Recorder) {
	t.Helper()
	u := &Recorder{}
	cfg.TritonGRPC = StartUpstreamGRPC(t, func(*grpc.Server) {}, grpc.UnknownServiceHandler(u.Handle), grpc.ForceServerCodecV2(passthrough.Codec{}))
	cfg.TritonHTTP = StartUpstreamHTTP(t, u)
	return StartSidecar(t, cfg), u
}
