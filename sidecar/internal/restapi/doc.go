// Package restapi holds the rules of Triton's HTTP/REST API that the
// sidecar follows when it answers for a controllable model itself, so that
// a client cannot tell its answers from Triton's: a model's routes
// (ParseRoute), a raw binary request made an ordinary one (RawInput),
// outputs that have no JSON form (JSONOutputsFit), protocol messages
// written as Triton writes them in JSON (WriteJSON) and its repository
// index's entries (IndexEntry), the HTTP status of a gRPC code
// (HTTPStatus), and the headers of an HTTP request that become the gRPC
// metadata of the sidecar's own calls to Triton (GRPCMetadata). The
// bodies themselves are package triton/tritonhttp's.
package restapi
