package calibrate

import (
	"errors"
	"fmt"
)

// Exit codes of the calibrate command.
const (
	ExitOK      = 0 // success
	ExitFailure = 1 // runtime failure: bad or unreadable input, numerical failure, write error
	ExitUsage   = 2 // usage error: unknown command or flag, invalid flag value or argument
)

// usageError marks an error as the user's misuse of the command.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usagef returns a usage error.
func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// asUsage marks err, if not nil, as a usage error.
func asUsage(err error) error {
	if err == nil {
		return nil
	}
	return &usageError{err}
}

func isUsage(err error) bool {
	var u *usageError
	return errors.As(err, &u)
}
