// Package sidecar is the ReACT sidecar: a server that speaks Triton's gRPC
// and HTTP protocol in front of an existing Triton Inference Server, so that
// clients change nothing but the address they call.
//
// This version is the pass-through layer. Every gRPC method (unary or
// streaming, known or not, grpc.health.v1 included) is relayed frame by
// frame to the upstream Triton over one shared *grpc.ClientConn, with a raw
// codec that never decodes a message (see Frame). Every HTTP request is
// relayed by an httputil.ReverseProxy, paths, headers and bodies unchanged.
// Metadata, headers, trailers, status codes, deadlines and cancellation
// travel both ways.
//
// The controllable-model handling will plug in through two seams, consulted
// before a call is passed through: GRPCInterceptor (by full method name) and
// HTTPInterceptor (by request). For now nothing intercepts.
//
// Main is the sidecar command; cmd/sidecar only calls it.
package sidecar
