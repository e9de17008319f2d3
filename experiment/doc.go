// Package experiment assigns the keys of an A/B experiment (user ids,
// session ids) to its weighted arms, the same way on every replica and in
// every language.
//
// The assignment (DESIGN §4, docs/sidecar.md) hashes experiment + ":" + key
// with murmur3 x86_32, seed 0, and maps the hash h to a bucket over the arms'
// integer weights w_1..w_n:
//
//	bucket = (h · Σw) >> 32,   arm = the first i with bucket < w_1 + … + w_i
//
// so arm i holds the keys whose h / 2³² lies in [C_{i-1}, C_i) / Σw, where
// C_i is the sum of the first i weights. Which keys move when the weights
// change follows from these intervals alone. An experiment that
// takes only a share of the traffic admits a key when murmur3 x86_32 of the
// same string with seed 1, as a fraction of 2³², is below the share: the
// two hashes are independent, so changing the share does not reshuffle the
// arms and changing the weights does not change who takes part.
//
// The package has no dependency on the rest of the project: the sidecar,
// the Triton backend and the calibrate command share it, and
// experiment/assign.py reproduces it in Python.
package experiment
