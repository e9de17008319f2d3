// Package calibrate implements the calibrate command: it fits the per-task
// ReACT statistics from paired embeddings into a components file, inspects
// and edits components files, and solves W_p for a preference.
//
// The command is built with cobra; NewCommand returns it and Main runs it
// with given arguments and output streams, so tests run it in-process. The
// binary in cmd/calibrate only calls Main.
//
// Exit codes: 0 on success, 1 on a runtime failure (unreadable or corrupt
// input, numerical failure, write error), 2 on a usage error (unknown
// command or flag, missing or invalid flag value, malformed preference).
//
// The command holds the cobra wiring and what each subcommand does with
// its flags; the library it stands on is in packages of their own, which
// other programs import too: calibrate/fit (a whole fit from its
// configuration: sources opened and checked, checkpoints, β chosen, the
// file written), calibrate/progress (the --progress reporter of fit and
// eval), calibrate/pairs (the pair source interface,
// the accumulation, the choice of samples), calibrate/embeddings (the .npy
// embeddings), calibrate/tritonpairs (features computed on Triton),
// react/partialfile (checkpoints and shards), calibrate/images (image
// folders), and evaluate (calibrate eval).
package calibrate
