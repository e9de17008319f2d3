// Package sidecar is the ReACT sidecar: a server that speaks Triton's gRPC
// and HTTP protocol in front of an existing Triton Inference Server, so that
// clients change nothing but the address they call.
//
// Every call it does not serve itself is passed through. Every gRPC method
// (unary or streaming, known or not, grpc.health.v1 included) is relayed
// frame by frame to the upstream Triton over one shared *grpc.ClientConn,
// with a raw codec that never decodes a message (see Frame); every HTTP
// request is relayed by an httputil.ReverseProxy. Metadata, headers,
// trailers, status codes, deadlines and cancellation travel both ways;
// ReACT's own react-* keys are stripped.
//
// Before a call is passed through, two seams are consulted:
// GRPCInterceptor (by full method name) and HTTPInterceptor (by request).
// Through them the sidecar serves the controllable models its
// configuration declares (Models): inference with W_p applied to the
// backbone's feature for the request's preference, in the explicit form
// (backbone, correction, heads) or the graph form (a shadowed ensemble's
// steps), and the metadata, configuration, readiness, statistics and
// repository index Triton would answer for them. The transport-independent
// part of that path is package sidecar/pipeline, the models' statistics
// package sidecar/modelstats.
//
// Around the seams sit the front door (connection caps, header and body
// limits, timeouts, TLS with certificate reload, the management endpoints
// and readiness), the limits on what one request may hold, the admission
// of new preferences by client key, the reload of the configuration (built
// completely before it replaces the one in service), and Prometheus
// metrics on a listener of their own.
//
// Main is the sidecar command; cmd/sidecar only calls it.
package sidecar
