// Package pairs is what a fit reads its statistics from: a Source yields
// one task's calibration features in paired batches (row i of a merged
// batch and row i of the expert batch are the merged backbone's and the
// task expert's features of the same input), and Accumulate adds every
// pair of a source into a react.Accumulator in memory bounded by the
// chunk, whatever the number of pairs.
//
// It also chooses the samples a fit uses: Select draws a seeded subset
// and a shard's part of it, Holdout the share that label-free β selection
// holds out, and Selected passes on only the chosen pairs of any source.
//
// The sources themselves are elsewhere: calibrate/embeddings reads the
// .npy embeddings, calibrate/tritonpairs runs the models on Triton.
package pairs
