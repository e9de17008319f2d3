// Package metrics holds the measures of a set of preferences that the
// paper reports (appendix A.3): NormalizedAccuracy, each task's accuracy
// relative to its expert's; Hypervolume, the exact volume dominated by a
// set of points above a reference point (two dimensions by a sweep, more
// by the WFG algorithm); and Uniformity, how evenly a model's normalised
// accuracies follow its preference. They are pure functions of float64
// slices, used by evaluate's summaries and by anyone plotting a front.
package metrics
