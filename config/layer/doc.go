// Package layer is the one layering engine of every configuration of the
// module: the sidecar's (package config) and calibrate's (fit's schema and
// the flag commands' CommandFlags). For each scalar key of a
// configuration's struct (Keys), the default, the YAML file, the REACT_*
// environment variable (EnvVar) and the flag that was set are layered by
// viper in rising precedence (New, Layers.Apply), and the source of each
// value is recorded, so that a problem names its line in the file, its
// variable or its flag (Layers.Finish).
//
// The file itself is read by a strict decoder (ReadFile), not by viper:
// an unknown key, with the known key it is closest to (Suggest), or a
// value of the wrong type (Describe) is a problem at its path and line,
// and every such problem is reported at once; Unmasked drops the
// validation problems that one of them already explains.
//
// A command whose configuration is its flags has no struct: its keys are
// names (NamedKey), its file is read by the same decoder as values or
// lists of values kept as strings (ReadKeys), and Layers.Visit hands it
// the value that wins for each key and where that came from, for the flag
// to parse.
//
// The package also holds the checks of values that several configurations
// hold alike: a host:port address (CheckAddr), a model version
// (CheckVersion), a duration that may not be negative (NonNegative).
package layer
