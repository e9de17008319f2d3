// Package backendmode makes the react-preference and react-preset headers
// of a request the sidecar relays into the request parameters a react
// step reads.
//
// A Triton model of the react backend, or an ensemble with such a step,
// reads the preference from its request's parameters (react-preference,
// react-preset). The sidecar strips ReACT's headers from the calls it
// relays, so a client that sends them to such a model through the sidecar
// would get an uncorrected answer; instead the sidecar turns them into the
// request parameters the react step reads. The sidecar's precedence then
// holds in the backend too: a react-preference header overrides the
// parameter, and a react-preset header the preset parameter, while a
// react-preference parameter still beats a preset header (the backend
// reads a preference before a preset).
//
// Readers tells which models read the parameters (Triton's
// configurations, cached) and which parameters a request's headers make;
// SetGRPC and SetHTTP set them on a relayed request's body.
package backendmode
