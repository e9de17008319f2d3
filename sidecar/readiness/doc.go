// Package readiness decides whether the sidecar is ready to serve: its
// controllable models built, and every model they call (backbones, heads,
// an ensemble's steps) ready on Triton, asked with ModelReady at each
// check. A Checker reuses an answer for TTL and shares one check among
// concurrent callers, so that probes and clients polling readiness cost
// Triton little; it logs each change of the answer and reports every
// outcome to the metrics. The sidecar answers /v2/health/ready, gRPC's
// ServerReady and /readyz with it, and tells a request whose model lost a
// part on Triton apart from one Triton refused (PartsReady).
package readiness
