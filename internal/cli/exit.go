package cli

import (
	"errors"
	"fmt"
)

// Exit codes of the repository's commands (a contract: docs/contracts.md).
const (
	ExitOK      = 0 // success, or a server stopped on request
	ExitFailure = 1 // the command's own work failed: bad or unreadable input, a server that cannot start
	ExitUsage   = 2 // the command line is wrong: unknown command or flag, invalid flag value or argument
)

// usageError marks an error as the user's misuse of the command.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// Usagef returns a usage error formatted as fmt.Errorf does.
func Usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// AsUsage marks err, if not nil, as a usage error.
func AsUsage(err error) error {
	if err == nil {
		return nil
	}
	return &usageError{err}
}

// IsUsage reports whether err, or an error it wraps, is marked as a usage
// error.
func IsUsage(err error) bool {
	var u *usageError
	return errors.As(err, &u)
}
