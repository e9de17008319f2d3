// Package sidecartest is test support only: what the tests of the
// sidecar's packages share. It starts upstreams (StartUpstreamGRPC,
// StartUpstreamHTTP, RawUpstream, Recorder) and sidecars in front of them
// (StartSidecar, StartRecorded), and a Harness: a whole sidecar, with its
// controllable models, metrics and management guard, in front of an
// in-process fake Triton (sidecar/internal/faketriton) serving a scenario
// whose answers the tests compute on their own (CtlRequest, WantLogits,
// CheckLogits); and the requests, metric scrapes and files the tests make.
package sidecartest
