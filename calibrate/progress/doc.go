// Package progress shows the progress of calibrate's long runs (fit, eval)
// on a terminal or in a log: a bar per task (samples done, samples/s, the
// time left), a line every ten seconds, or nothing, as the --progress mode
// (config.ProgressAuto, ProgressAlways, ProgressLog, ProgressNever) says.
package progress
