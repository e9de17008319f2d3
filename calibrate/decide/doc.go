// Package decide is the library of calibrate experiment report: it reads
// an experiment's outcome counters (package experiment/feedback's
// react_experiment_outcomes_total, _outcome_score_total and
// _outcome_score_squares_total) from sidecars' /metrics pages or from a
// Prometheus server's HTTP API, sums them per arm, and decides the
// experiment with package experiment/sequential: each arm's mean with its
// always-valid interval, each arm set beside the control arm (the
// difference, its always-valid interval and p-value), the sample-ratio
// check against the arms' weights, and a decision per arm and overall.
//
// Every problem of the sources (an address that does not answer, a page
// that does not parse, counters no outcomes in [0, 1] give) is reported
// at once, as a problem.List whose paths are the sources.
package decide
