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
// Fitting reads its inputs through the PairSource interface, a source of
// paired batches of merged-backbone and expert features for one task, and
// one accumulation loop (Accumulate) serves every source. The .npy
// embeddings are one implementation (OpenNPYPairs); the other runs the
// merged backbone and each task's expert on a Triton server, over the
// task's calibration inputs (OpenTritonPairs), and checks the server, the
// models and the inputs before sending any sample.
package calibrate
