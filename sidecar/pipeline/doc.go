// Package pipeline is the sidecar's controllable path, independent of the
// transport: it builds the controllable models of a configuration against
// a live Triton (Build), and serves their inference requests, given as
// Triton's gRPC messages (Model.Infer): by calling the merged backbone,
// correcting its feature with W_p and calling the head(s); or, for a
// model of the graph form, by running the ensemble's steps with W_p
// applied to one tensor (package graphform, whose calls to Triton the
// pipeline makes). It also answers for them what Triton answers for its
// own models: metadata and configuration; each model counts its requests
// in a sidecar/modelstats Stats that outlives reloads.
//
// The gRPC and HTTP front ends of package sidecar translate to and from
// these messages; package control resolves preferences and holds the W_p
// cache.
package pipeline
