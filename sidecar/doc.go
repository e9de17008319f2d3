// Package sidecar is the ReACT sidecar command: a server that speaks
// Triton's gRPC and HTTP protocol in front of an existing Triton Inference
// Server, so that clients change nothing but the address they call.
//
// Main (which cmd/sidecar calls) and NewCommand load the configuration
// (package sidecar/config) and wire the parts, each a package of its own:
//
//   - sidecar/server: the listeners and the gRPC and HTTP servers, the
//     front door put before the pass-through;
//   - sidecar/passthrough: every call the sidecar does not serve itself,
//     relayed to Triton unchanged, and the seams where it takes a call
//     over;
//   - sidecar/frontdoor: what every connection and call passes first
//     (connection caps, header sizes, timeouts, TLS with certificate
//     reload, the guard of Triton's management API, Go's profiles);
//   - sidecar/controllable: the controllable models the configuration
//     declares, built against Triton and answered for on both protocols
//     through the seams (inference with W_p applied for the request's
//     preference, with sidecar/pipeline, and the metadata, configuration,
//     readiness, statistics and repository index Triton would answer);
//   - sidecar/limits, sidecar/readiness and sidecar/metrics: what one
//     request may hold, whether the sidecar is ready, and the Prometheus
//     metrics on a listener of their own.
//
// The command itself keeps the reload: on SIGHUP, and when the
// configuration, a components file or the management token file changes,
// the configuration is loaded and the controllable models built again
// completely before they replace the ones in service; a reload that fails
// keeps the previous state serving.
package sidecar
