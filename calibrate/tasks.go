package calibrate

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/componentsfile"
	"github.com/mergectl/react-triton/react/heldout"
)

func newTasksCommand(stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tasks",
		Short: "Add or remove tasks in a components file without recalibrating",
		Long: `Each task's statistics in a components file are independent of the
others', so tasks can be added from another components file, or removed,
without recalibrating anything. The other tasks' statistics are copied bit
for bit (an added task's recorded reconstruction error is computed again at
the destination's default β and normalisation). The result is written to --out (which may be the input file; it is
replaced atomically).`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newTasksAddCommand(stdout), newTasksRemoveCommand(stdout))
	return cmd
}

func newTasksAddCommand(stdout io.Writer) *cobra.Command {
	var file, from, out string
	cmd := &cobra.Command{
		Use:   "add --components FILE --from OTHER --out OUT",
		Short: "Add the tasks of another components file",
		Long: `add copies every task of OTHER into FILE's tasks and writes the result to
OUT. Both files must have the same feature dimension D and the same merged
backbone (model, version and output), and no task may be in both. OUT keeps
FILE's default β and normalisation.`,
		Example: `  calibrate tasks add --components base.safetensors --from svhn.safetensors --out all.safetensors`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dst, err := componentsfile.Load(file)
			if err != nil {
				return err
			}
			src, err := componentsfile.Load(from)
			if err != nil {
				return err
			}
			if err := react.AddTasks(dst, src); err != nil {
				return fmt.Errorf("%s + %s: %w", file, from, err)
			}
			// The added tasks' recorded errors hold at OTHER's defaults.
			if err := heldout.Record(dst, src.TaskNames()...); err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "calibrate: reconstruction error not recorded: %v\n", err)
			}
			if err := componentsfile.Save(out, dst); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "wrote %s: tasks %s\n", out, strings.Join(dst.TaskNames(), ","))
			return nil
		},
	}
	cmd.Flags().StringVar(&file, "components", "", "components `FILE` to add to (required)")
	cmd.Flags().StringVar(&from, "from", "", "components file `OTHER` whose tasks are added (required)")
	cmd.Flags().StringVar(&out, "out", "", "components file `OUT` to write (required)")
	for _, f := range []string{"components", "from", "out"} {
		cmd.MarkFlagRequired(f)
	}
	return cmd
}

func newTasksRemoveCommand(stdout io.Writer) *cobra.Command {
	var file, out string
	var names []string
	cmd := &cobra.Command{
		Use:   "remove --components FILE --task NAME [--task NAME...] --out OUT",
		Short: "Remove tasks",
		Long: `remove drops the named tasks from FILE and writes the result to OUT. At
least one task must remain.`,
		Example: `  calibrate tasks remove --components all.safetensors --task svhn --out base.safetensors`,
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			info, err := componentsfile.ReadInfo(file)
			if err != nil {
				return err
			}
			// Check the names against the header before loading the data.
			probe := &react.Components{}
			for _, t := range info.Tasks {
				probe.Tasks = append(probe.Tasks, &react.TaskStats{Name: t.Name})
			}
			if err := react.RemoveTasks(probe, names...); err != nil {
				return asUsage(fmt.Errorf("--task: %w", err))
			}
			c, err := componentsfile.Load(file)
			if err != nil {
				return err
			}
			if err := react.RemoveTasks(c, names...); err != nil {
				return err
			}
			if err := componentsfile.Save(out, c); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "wrote %s: tasks %s\n", out, strings.Join(c.TaskNames(), ","))
			return nil
		},
	}
	cmd.Flags().StringVar(&file, "components", "", "components `FILE` to remove from (required)")
	cmd.Flags().StringSliceVar(&names, "task", nil, "task `NAME` to remove; repeat it or separate names with commas (required)")
	cmd.Flags().StringVar(&out, "out", "", "components file `OUT` to write (required)")
	for _, f := range []string{"components", "task", "out"} {
		cmd.MarkFlagRequired(f)
	}
	return cmd
}
