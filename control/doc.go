// Package control is what both serving modes of ReACT share: the sidecar
// (package sidecar) and the Triton backend. It turns what a request says
// about its preference into a W_p matrix, and owns no server.
//
// A Profile is one components file in use: its tasks, its solver (β and the
// normalisation fixed), its default preference and its named presets.
// Profile.Resolve applies the precedence of the request's keys,
//
//  1. the react-preference header (gRPC metadata),
//  2. the react-preference request parameter,
//  3. a preset named by react-preset (header, then parameter),
//  4. the default preference,
//
// and returns a Choice: the preference rounded to its short canonical form
// (react.Preference.Rounded), which is both what the sidecar echoes and the
// key of the W_p cache. The word "none" asks for no correction.
// Profile.Matrix returns the Choice's W_p: the default and the presets are
// solved once, by Profile.Warm, and pinned; any other preference goes
// through the Cache, an LRU with singleflight, so that concurrent requests
// for one new preference solve it once.
//
// Matrix.Apply is the correction seam: it applies W_p to a batch of
// features.
package control
