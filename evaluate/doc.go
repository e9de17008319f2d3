// Package evaluate measures what a preference does to a merged model: the
// accuracy of every task under the ReACT correction W_p (and the naive and
// polar aggregations the paper ablates), the normalised accuracies, the
// hypervolume of a set of preferences and how uniformly each follows its
// preference (paper, appendix A.3). The metrics themselves,
// NormalizedAccuracy, Hypervolume and Uniformity, are package
// evaluate/metrics.
//
// An evaluation extracts each backbone's features of every task's labelled
// inputs once, through the models themselves (a Model: Triton, or an
// in-process stand-in in tests), and reuses them for every preference,
// aggregation, β and normalisation: a preference costs one D×D solve, one
// batched product Ẑ = Z W_pᵀ per task, and the task's head on Ẑ, called in
// batches. calibrate eval is its command-line front end
// (docs/evaluate.md).
package evaluate
