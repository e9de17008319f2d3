package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
)

// failure marks an error a command returned from its own work, as opposed
// to one cobra found in the command line.
type failure struct{ err error }

func (e *failure) Error() string { return e.err.Error() }
func (e *failure) Unwrap() error { return e.err }

// Main runs root with args (without the program's name) and returns the
// exit code: ExitOK, ExitFailure or ExitUsage (see the package's rule). It
// prints an error to root's error stream, after root's name, and for a
// usage error adds "Run '<command> --help' for usage.", naming the
// subcommand the arguments reached.
//
// Main marks the errors of every command of the tree (its RunE and its
// hooks) as failures before it runs root, so a command need not.
func Main(root *cobra.Command, args []string) int {
	markFailures(root)
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return ExitOK
	}
	stderr := root.ErrOrStderr()
	fmt.Fprintf(stderr, "%s: %v\n", root.Name(), err)
	var f *failure
	if errors.As(err, &f) && !IsUsage(err) {
		return ExitFailure
	}
	if cmd == nil {
		cmd = root
	}
	fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	return ExitUsage
}

// markFailures makes the errors that c and its subcommands return from
// their own functions failures, unless they are usage errors.
func markFailures(c *cobra.Command) {
	for _, fn := range []*func(*cobra.Command, []string) error{
		&c.PersistentPreRunE, &c.PreRunE, &c.RunE, &c.PostRunE, &c.PersistentPostRunE,
	} {
		if *fn != nil {
			*fn = asFailure(*fn)
		}
	}
	for _, sub := range c.Commands() {
		markFailures(sub)
	}
}

// asFailure wraps fn so that its errors are failures unless fn marks them
// as usage errors.
func asFailure(fn func(*cobra.Command, []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		err := fn(cmd, args)
		if err == nil || IsUsage(err) {
			return err
		}
		var f *failure
		if errors.As(err, &f) {
			return err
		}
		return &failure{err}
	}
}
