package calibrate

import "github.com/mergectl/react-triton/internal/cli"

// Exit codes of the calibrate command: those of package cli, the same for
// both binaries.
const (
	ExitOK      = cli.ExitOK      // success
	ExitFailure = cli.ExitFailure // runtime failure: bad or unreadable input, numerical failure, write error
	ExitUsage   = cli.ExitUsage   // usage error: unknown command or flag, invalid flag value or argument
)

// usagef returns a usage error (cli.Usagef).
func usagef(format string, args ...any) error { return cli.Usagef(format, args...) }

// asUsage marks err, if not nil, as a usage error (cli.AsUsage).
func asUsage(err error) error { return cli.AsUsage(err) }

// isUsage reports whether err is a usage error (cli.IsUsage).
func isUsage(err error) bool { return cli.IsUsage(err) }
