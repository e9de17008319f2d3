// Package figures draws an evaluation's result (evaluate.Result) as PNG
// figures with gonum/plot: the trade-off curve of each pairwise set, with
// the uncorrected backbone and the experts marked; accuracy against β;
// accuracy against the number of calibration samples; and a heat map over
// the simplex of each 3-task simplex set.
//
// Each figure is drawn from the numbers of the result alone, so that the
// same JSON gives the same figures; Write draws every figure a result
// supports. calibrate eval --plots DIR calls it.
package figures
