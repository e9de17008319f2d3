package triton

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The client caches each model's metadata and configuration (Infer validates
// requests against them), but a model can be unloaded, reloaded with other
// tensors, or replaced while the client runs. The server's answers say when
// that may have happened, and then the cached entries are dropped, so the
// next call fetches them afresh:
//
//   - NOT_FOUND: the model (or version) is gone;
//   - UNAVAILABLE: the model is loading, unloading or not ready, or the
//     server is restarting;
//   - FAILED_PRECONDITION: the model is in a state that cannot serve;
//   - INVALID_ARGUMENT from the server on ModelInfer: a request that passed
//     validation against the cached metadata was refused, so that metadata
//     no longer describes the model. Our own validation errors, raised
//     before anything is sent, do not count.

// staleModelCode reports whether a server error with code on a call about
// one model means that model's cached metadata and configuration may be
// stale. infer is true for ModelInfer.
func staleModelCode(code codes.Code, infer bool) bool {
	switch code {
	case codes.NotFound, codes.Unavailable, codes.FailedPrecondition:
		return true
	case codes.InvalidArgument:
		return infer
	}
	return false
}

// forgetIfStale drops model's cached metadata and configuration if err, the
// error of a call that reached (or tried to reach) the server, says they may
// be stale.
func (c *Client) forgetIfStale(model string, err error, infer bool) {
	if err != nil && staleModelCode(status.Code(err), infer) {
		c.ForgetModel(model)
	}
}
