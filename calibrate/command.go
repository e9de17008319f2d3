package calibrate

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/mergectl/react-triton/internal/buildinfo"
	"github.com/mergectl/react-triton/internal/cli"
	"github.com/mergectl/react-triton/react"
)

// NewCommand returns the calibrate command with all its subcommands, writing
// its normal output to stdout and its diagnostics and progress to stderr.
func NewCommand(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "calibrate",
		Short: "Fit, inspect, edit and solve ReACT components",
		Long: `calibrate builds and uses the ReACT correction of a merged model.

A merged model serves many tasks from one backbone but loses some accuracy
on each. ReACT corrects the backbone's feature z with a D×D matrix W_p,
ẑ = W_p z, computed in closed form for any preference p over the tasks.

The workflow:
  1. fit      read paired embeddings of the merged backbone and of each
              task's expert, and write the per-task statistics to a
              components file (safetensors);
  2. inspect  show what a components file holds and check its integrity;
  3. solve    compute W_p for a preference such as cars=0.6,dtd=0.4 and
              write it as a D×D float32 .npy array;
  4. tasks    add or remove tasks in a components file without
              recalibrating the others;
  5. merge    add the partial statistics of a fit sharded over several
              machines (fit --shard i/n) into a components file;
  6. experiment  print the arm an A/B experiment of the sidecar gives
              each key, offline (assign), and decide an experiment from
              the outcomes the sidecars counted (report);
  7. eval     measure per-task accuracy, hypervolume and uniformity of
              preferences on labelled data, through Triton.

Exit status: 0 on success, 1 on a runtime failure, 2 on a usage error.`,
		Example: `  calibrate fit --embeddings emb/ --beta 0.1 --out components.safetensors
  calibrate inspect components.safetensors
  calibrate solve --components components.safetensors --preference cars=0.6,dtd=0.4 --out W.npy`,
		Version:       buildinfo.Version(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return asUsage(err) })
	var linalg string
	var threads int
	root.PersistentFlags().StringVar(&linalg, "linalg", react.BackendAuto,
		"linear algebra backend: auto (the GPU when this binary has the cuda backend and a GPU is there, else OpenBLAS when it has it, else pure Go), go, openblas or cuda")
	root.PersistentFlags().IntVar(&threads, "threads", 0,
		"most threads one OpenBLAS call may use (0: OpenBLAS's default, every core)")
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		name, err := react.ParseBackend(linalg)
		if err != nil {
			return usagef("--linalg: %v", err)
		}
		if threads < 0 {
			return usagef("--threads must be ≥ 0, got %d", threads)
		}
		if name, err = react.UseBackend(name); err != nil {
			return usagef("--linalg: %v", err)
		}
		if why := react.BackendFallback(); why != "" {
			fmt.Fprintf(stderr, "calibrate: linear algebra %s: %s\n", name, why)
		}
		react.SetBackendThreads(threads)
		return nil
	}
	root.AddCommand(
		newFitCommand(stdout, stderr),
		newSolveCommand(stdout, stderr),
		newInspectCommand(stdout),
		newTasksCommand(stdout),
		newMergeCommand(stdout),
		newExperimentCommand(stdout),
		newEvalCommand(stdout, stderr),
		newUpgradeCommand(stdout),
	)
	return root
}

// Main runs the calibrate command with args (without the program name) and
// returns the process exit code: ExitOK, ExitFailure or ExitUsage, as
// cli.Main decides for both binaries. Errors are printed to stderr.
func Main(args []string, stdout, stderr io.Writer) int {
	return cli.Main(NewCommand(stdout, stderr), args)
}
