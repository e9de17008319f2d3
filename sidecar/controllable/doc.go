// Package controllable serves the controllable models a sidecar
// configuration declares, on both of Triton's protocols.
//
// Models builds them against Triton (Start at start-up, Reload at each
// reload, with sidecar/pipeline), holds the set in service behind an
// atomic pointer, and answers for them through the pass-through's seams
// (GRPCInterceptor, HTTPInterceptor): inference with W_p applied to the
// backbone's feature for the request's preference, in the explicit form
// (backbone, correction, heads) or the graph form (a shadowed ensemble's
// steps); ModelStreamInfer streams that mix controllable and other models;
// and the metadata, configuration, readiness, statistics and repository
// index Triton would answer for them. Requests for other models pass
// through, after the limits every inference request is held to
// (sidecar/limits) and, for a model with a react step, with the request's
// react-* headers made request parameters (backend mode,
// sidecar/backendmode). The sidecar's own readiness (sidecar/readiness)
// is answered here too, on /v2/health/ready, ServerReady and /readyz
// (ReadyzHandler).
package controllable
