// Package frontdoor holds what every connection and call passes before the
// sidecar's seams: the bounds of the server section of the configuration
// (ServerLimits, and gRPC's streams, keepalive and handshake in
// GRPCServerOptions), a cap on the connections open through a listener
// (LimitListener), the size of a request's headers and the guard that
// keeps Triton's management API closed unless allowed (Management), for
// HTTP (WrapHTTP, with the write timeout) and gRPC (GRPCCheck), TLS with
// the certificate reloaded from disk (CertStore), and Go's profiles on a
// listener of their own (PprofHandler). Package sidecar/server puts them
// before the pass-through.
package frontdoor
