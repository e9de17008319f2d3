package cli

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/spf13/cobra"
)

// tool is a command tree like the binaries': a root with a persistent
// flag and hook, and a subcommand that fails as its --fail flag says.
func tool(stderr *bytes.Buffer) *cobra.Command {
	root := &cobra.Command{Use: "tool", SilenceUsage: true, SilenceErrors: true}
	root.SetOut(stderr)
	root.SetErr(stderr)
	var pre string
	root.PersistentFlags().StringVar(&pre, "pre", "", "how the root's hook fails: usage or run")
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		switch pre {
		case "usage":
			return Usagef("--pre: %q", pre)
		case "run":
			return errors.New("hook failed")
		}
		return nil
	}
	var fail string
	do := &cobra.Command{Use: "do", Args: cobra.NoArgs, RunE: func(*cobra.Command, []string) error {
		switch fail {
		case "run":
			return errors.New("boom")
		case "usage":
			return Usagef("--fail: bad value %q", fail)
		case "wrapped-usage":
			return fmt.Errorf("reading flags: %w", AsUsage(errors.New("no such thing")))
		}
		return nil
	}}
	do.Flags().StringVar(&fail, "fail", "", "how to fail")
	root.AddCommand(do)
	return root
}

func TestMainExitCodes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"success", []string{"do"}, ExitOK, ""},
		{"a failure of the command's work", []string{"do", "--fail", "run"}, ExitFailure, "tool: boom\n"},
		{"a failure of a hook", []string{"do", "--pre", "run"}, ExitFailure, "tool: hook failed\n"},
		{"a usage error of the command", []string{"do", "--fail", "usage"}, ExitUsage,
			"tool: --fail: bad value \"usage\"\nRun 'tool do --help' for usage.\n"},
		{"a usage error, wrapped", []string{"do", "--fail", "wrapped-usage"}, ExitUsage,
			"tool: reading flags: no such thing\nRun 'tool do --help' for usage.\n"},
		{"a usage error of a hook", []string{"do", "--pre", "usage"}, ExitUsage,
			"tool: --pre: \"usage\"\nRun 'tool do --help' for usage.\n"},
		{"an unknown flag", []string{"do", "--nope"}, ExitUsage,
			"tool: unknown flag: --nope\nRun 'tool do --help' for usage.\n"},
		{"an unknown command", []string{"zzz"}, ExitUsage,
			"tool: unknown command \"zzz\" for \"tool\"\nRun 'tool --help' for usage.\n"},
		{"an argument too many", []string{"do", "extra"}, ExitUsage,
			"tool: unknown command \"extra\" for \"tool do\"\nRun 'tool do --help' for usage.\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			code := Main(tool(&stderr), tc.args)
			if code != tc.code || stderr.String() != tc.stderr {
				t.Errorf("Main(%q) = %d, stderr %q; want %d, %q", tc.args, code, stderr.String(), tc.code, tc.stderr)
			}
		})
	}
}

func TestIsUsage(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("x"), false},
		{Usagef("x %d", 1), true},
		{AsUsage(errors.New("x")), true},
		{fmt.Errorf("y: %w", Usagef("x")), true},
		{errors.Join(errors.New("a"), Usagef("b")), true},
	} {
		if got := IsUsage(tc.err); got != tc.want {
			t.Errorf("IsUsage(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	if AsUsage(nil) != nil {
		t.Error("AsUsage(nil) is not nil")
	}
	if err := Usagef("x %d", 1); err.Error() != "x 1" {
		t.Errorf("Usagef: %q", err)
	}
}
