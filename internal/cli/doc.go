// Package cli holds what the repository's two binaries, calibrate and
// sidecar, agree on at their command line: the exit codes, what a usage
// error is, and Main, which runs a cobra command and turns its error into
// a message and an exit code.
//
// The rule, the same for both: an error cobra finds in the command line
// (an unknown command or flag, a flag value that does not parse, the wrong
// number of arguments), or one a command marks with Usagef or AsUsage, is
// a usage error: exit 2, the error and a hint to run --help. Any other
// error a command returns is a failure: exit 1 and the error. Both are
// printed after the program's name, "calibrate: ...".
package cli
