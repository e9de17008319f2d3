package sidecar

import (
	"net/http"

	"google.golang.org/grpc"
)

// GRPCInterceptor is the seam where the sidecar will take over calls itself
// (controllable models). The proxy consults it once per call, before
// anything is sent upstream, with the call's full method name, for example
// "/inference.GRPCInferenceService/ModelInfer". A nil result passes the call
// through to Triton; a non-nil handler serves the whole call instead, reading
// and writing *Frame messages on the stream (the server's codec is raw).
// A nil GRPCInterceptor intercepts nothing.
type GRPCInterceptor func(method string) grpc.StreamHandler

// HTTPInterceptor is the HTTP counterpart of GRPCInterceptor: consulted once
// per request before it is proxied; a nil result passes the request through
// to Triton, a non-nil handler serves it instead. A nil HTTPInterceptor
// intercepts nothing.
type HTTPInterceptor func(r *http.Request) http.Handler
