// Package config reads and checks the configuration of every calibrate
// command: calibrate fit's schema (Calibrate: Triton, the inputs or
// embeddings, the models, images, samples, checkpoints, β, progress),
// loaded by LoadCalibrate from its defaults, a YAML file, REACT_*
// environment variables (EnvVar names them) and the flags of
// BindCalibrateFlags; CommandFlags, the same layers for the commands whose
// configuration is their flags (eval, solve, experiment, upgrade); and
// ProfileFlags, the adapter of control.Settings.Check for the profile
// flags of eval and solve. The layering engine is package config/layer,
// which the sidecar's configuration (sidecar/config) shares.
//
// Every problem is reported at once, as a problem.List with each value's
// path and its line in the file, or the variable or flag it came from.
// calibrate.example.yaml, next to this package's source, documents every
// key of calibrate fit.
package config
