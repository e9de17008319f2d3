package passthrough

import (
	"net/http"

	"google.golang.org/grpc"
)

// GRPCHandler serves one intercepted gRPC call, reading and writing *Frame
// messages on the stream (the server's codec is raw). pass relays the rest
// of the call to Triton, as the proxy would have: first, when not nil, is a
// message the handler already read from the client, sent upstream before
// the ones still to come. A handler that reads the request to decide (for
// example by the model it names) passes what it does not serve itself.
type GRPCHandler func(ss grpc.ServerStream, pass func(first *Frame) error) error

// GRPCInterceptor is the seam where the sidecar takes over calls itself
// (controllable models). The proxy consults it once per call, before
// anything is sent upstream, with the call's full method name, for example
// "/inference.GRPCInferenceService/ModelInfer". A nil result passes the call
// through to Triton; a non-nil handler serves the whole call instead. A nil
// GRPCInterceptor intercepts nothing.
type GRPCInterceptor func(method string) GRPCHandler

// HTTPInterceptor is the HTTP counterpart of GRPCInterceptor: consulted
// once per request before it is proxied; a nil result passes the request
// through to Triton, a non-nil handler serves it instead. pass is the proxy
// to Triton, for a handler that serves only some requests: it may replace
// the request's body (after reading it: SetBody) before passing it on. A nil
// HTTPInterceptor intercepts nothing.
type HTTPInterceptor func(r *http.Request, pass http.Handler) http.Handler
