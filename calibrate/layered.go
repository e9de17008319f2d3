package calibrate

import (
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mergectl/react-triton/config"
)

// layered binds a command's --config and --print-config and returns its
// RunE: the flags layered by c (the file, the REACT_* environment, the
// command line), the required flags checked, --print-config answered,
// then run.
func layered(cmd *cobra.Command, c config.CommandFlags, stdout io.Writer, required []string, run func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	c.Bind(cmd.Flags())
	return func(cmd *cobra.Command, args []string) error {
		fs := cmd.Flags()
		// The root's --linalg and --threads took effect already.
		c.Program = nil
		cmd.InheritedFlags().VisitAll(func(f *pflag.Flag) { c.Program = append(c.Program, f.Name) })
		if err := c.Load(fs); err != nil {
			return asUsage(err)
		}
		if done, err := c.Print(stdout, fs); done {
			return err
		}
		var missing []string
		for _, name := range required {
			if f := fs.Lookup(name); f != nil && !f.Changed {
				missing = append(missing, "--"+name)
			}
		}
		if len(missing) > 0 {
			slices.Sort(missing)
			return usagef("%s required", strings.Join(missing, ", "))
		}
		return run(cmd, args)
	}
}
