// Package outcomes wires the outcome feedback of experiments (package
// experiment/feedback) into the sidecar.
//
// A request served with an experiment's arm is recorded in the process's
// one join window (Feedback.Record) under its model's name and its id: the
// id the client set (the KServe/Triton request id, which the response
// echoes as Triton does), or, for a request without one, an id the
// sidecar draws (128 random bits, in hex) and returns in the
// react-request-id response parameter and, over HTTP and unary gRPC, the
// react-request-id header (KeyRequestID). Requests served without an arm
// are not recorded: there is nothing to join their outcome to.
//
// The outcomes arrive on two endpoints that never reach Triton:
// POST /v2/models/{model}/feedback on the HTTP port (HTTPInterceptor, in
// front of the other seams, behind the front door) and the react.Feedback
// gRPC service on the gRPC port (RegisterGRPC, registered on the proxy's
// server beside the pass-through). Their statuses are
// experiment/feedback's: 404 / NOT_FOUND for an unknown or expired id,
// 409 / ALREADY_EXISTS for a duplicate, 400 / INVALID_ARGUMENT for an
// invalid outcome.
//
// The window outlives reloads: a request keeps the experiment, arm and
// predictions that served it, and its outcome is counted under them,
// whatever the configuration in service when the outcome arrives.
package outcomes
