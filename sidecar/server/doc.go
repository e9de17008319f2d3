// Package server runs a sidecar's listeners and servers: New opens the
// upstream gRPC connection to Triton (DialTriton) and the gRPC, HTTP,
// metrics and profiles listeners, with the front door (sidecar/frontdoor)
// before the pass-through (sidecar/passthrough) and its seams; Serve
// serves until asked to stop, then lets calls in flight finish within the
// shutdown timeout.
package server
