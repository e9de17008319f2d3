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
//  4. the arm of the model's experiment, while it runs,
//  5. the default preference,
//
// and returns a Choice: the preference rounded to its short canonical form
// (react.Preference.Rounded), which is both what the sidecar echoes and the
// key of the W_p cache. The word "none" asks for no correction.
//
// An Experiment (Profile.Experiment) splits the requests of the models that
// take part in it over weighted arms, each a preference or a preset, by a
// key the request carries (a user id): package experiment assigns the key,
// the same on every replica. A request without a key gets a random arm; one
// that names its own preference or preset is an override and gets no arm.
// The Choice says which arm, and how it was assigned.
//
// Profile.Matrix returns the Choice's W_p: the default, the presets and the
// experiments' arms are solved once, when the profile is built, and
// pinned; any other preference goes through the Cache. The Cache keeps one
// LRU per components file (with its β and normalisation), bounded in bytes,
// so that a flood of new preferences on one model never evicts another's;
// it admits new solves (a bounded queue, a rate per client key, a rate
// for every key together: OverloadError beyond them), solves concurrent requests for one new
// preference once, and cancels a solve once every request waiting for it
// has gone. A profile may also serve presets only, or round request
// preferences to a grid so that nearby ones share a W_p.
//
// Matrix.Apply is the correction seam: it applies W_p to a batch of
// features.
package control
