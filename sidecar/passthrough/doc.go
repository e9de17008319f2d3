// Package passthrough relays Triton's gRPC and HTTP protocols to an
// upstream Triton unchanged, with the seams where the sidecar takes a call
// over.
//
// GRPCProxy relays every gRPC method (unary or streaming, known or not,
// grpc.health.v1 included) frame by frame over one shared
// *grpc.ClientConn (a unary method of Triton's service, once its request
// is read, as one unary call; any other as a stream copied both ways),
// with a codec that never decodes a message it relays
// (Codec, Frame; it encodes the protobuf messages of a service registered
// beside the proxy, such as the sidecar's react.Feedback); NewHTTPProxy relays every HTTP request with an
// httputil.ReverseProxy. Metadata, headers, trailers, status codes,
// deadlines and cancellation travel both ways; ReACT's own react-* keys
// and the private ones of the configuration in service (PrivateKeys) are
// stripped (Forwardable), the peer is appended to X-Forwarded-For, and
// the upstream's addresses are kept out of what clients are told
// (Redactor).
//
// Before a call is relayed, the proxy consults a seam: GRPCInterceptor by
// full method name, HTTPInterceptor by request. A handler it returns
// serves the call instead, and may pass it on after all with what it
// already read (a Frame, a body: SetBody). What the sidecar's own
// handlers share with the proxy is here too: reading a unary call's request
// (RecvRequest), the context and the stream of an upstream call made on a
// client's behalf (UpstreamContext, OpenStream), and Triton's HTTP error
// answer (WriteHTTPError).
package passthrough
