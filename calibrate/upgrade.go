package calibrate

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mergectl/react-triton/calibrate/upgrade"
	"github.com/mergectl/react-triton/config"
)

type upgradeOptions struct {
	upgrade.Options
	dryRun  bool
	rollout string
	control string
	wait    time.Duration
}

func newUpgradeCommand(stdout io.Writer) *cobra.Command {
	o := &upgradeOptions{}
	cmd := &cobra.Command{
		Use:   "upgrade --repository DIR --model ENSEMBLE --correct TENSOR --components FILE [flags]",
		Short: "Insert the react backend into an ensemble of a model repository (backend mode)",
		Long: `upgrade makes an ensemble of a Triton model repository controllable in
backend mode (docs/upgrade.md): it writes a react model that corrects the
ensemble's tensor TENSOR with the components file, and the ensemble's
configuration with a react step on that tensor. Every other step, name and
the ensemble's signature stay as they were; with no preference the react
step passes the tensor through unchanged, so the ensemble answers as
before.

The tensor must be produced by exactly one step (the backbone) and taken
by at least one (the heads). The components file must have been calibrated
on that step's model and output, with the tensor's size D; a file of
another backbone is refused unless --variant-of names the model it was
calibrated on (for an FP16 copy of the same backbone, say).

What it writes, in this order:
  DIR/REACT/config.pbtxt             the react model (if it does not exist;
                                     an existing one must fit the tensor)
  DIR/REACT/V/components.safetensors the components file, as a new version
                                     V of the react model: Triton's version
                                     policy rolls it out, and a re-calibration
                                     is one more run of upgrade
  DIR/ENSEMBLE/config.pbtxt          the ensemble with the react step (once:
                                     the original is kept as config.pbtxt.orig;
                                     its text is edited in place, comments
                                     and all)
REACT is --react-model, by default react_<backbone model>. Files are
written atomically. --dry-run writes nothing and prints the plan and the
ensemble's diff.

The react model's profile (--preset, --default-preference, --beta,
--normalize, --cache-max-bytes, --cache-size, --max-preference-length,
the backend's model parameters of those names) is checked by the rules
of a sidecar's components entry, every problem at once, and each value
given is written.

--rollout HOST:PORT then brings the upgrade into the Triton that serves DIR,
over its HTTP endpoint, in the order that keeps it serving: the react
model's new version, then the ensemble with its react step, each loaded
(--control explicit: POST .../load) or waited for (--control poll) until
it is ready; the server's readiness is checked before and after.`,
		Example: `  calibrate upgrade --repository models --model cat_classifier --correct emb \
      --components cats.safetensors --preset gentle=cats=0.7,dogs=0.3 --dry-run`,
		Args: cobra.NoArgs,
	}
	f := cmd.Flags()
	f.StringVar(&o.Repository, "repository", "", "the model repository `DIR` (required)")
	f.StringVar(&o.Model, "model", "", "the `ENSEMBLE` to upgrade (required)")
	f.StringVar(&o.Correct, "correct", "", "the ensemble's `TENSOR` to correct, the backbone's embedding (required)")
	f.StringVar(&o.ReactModel, "react-model", "", "the react model's `NAME` (default: react_<backbone model>)")
	config.BindProfileFlags(f) // the react model's parameters, as the sidecar's components entry
	f.StringVar(&o.VariantOf, "variant-of", "", "accept a components file calibrated on `MODEL` rather than the backbone itself")
	f.BoolVar(&o.dryRun, "dry-run", false, "write nothing: print the plan and the ensemble's diff")
	f.StringVar(&o.rollout, "rollout", "", "then bring it into the Triton serving DIR at this HTTP `ADDRESS` (host:port), react model first")
	f.StringVar(&o.control, "control", upgrade.ControlExplicit, "with --rollout, the server's model control `MODE`: explicit (load the two models) or poll (wait for them)")
	f.DurationVar(&o.wait, "wait", 2*time.Minute, "with --rollout, how long to wait for the models to be ready")
	cmd.RunE = layered(cmd, config.CommandFlags{Paths: []string{"repository"}}.WithProfile(), stdout,
		[]string{"repository", "model", "correct", config.FlagComponents},
		func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Flags(), stdout) })
	return cmd
}

func (o *upgradeOptions) run(fs *pflag.FlagSet, stdout io.Writer) error {
	profile, problems := config.ProfileFlags(fs)
	if err := problems.Err(); err != nil {
		return asUsage(err)
	}
	o.Profile = profile
	o.Components, _ = fs.GetString(config.FlagComponents)
	var ro *upgrade.Rollout
	if o.rollout != "" {
		var err error
		if ro, err = upgrade.ParseRollout(o.rollout, o.control, o.wait, stdout); err != nil {
			return asUsage(err)
		}
	}
	plan, err := o.Plan()
	if err != nil {
		return err
	}
	if o.dryRun {
		return plan.Describe(stdout, &o.Options)
	}
	if err := plan.Write(&o.Options); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "upgrade: wrote %s version %d", plan.React, plan.Version)
	if plan.EditsEnsemble() {
		fmt.Fprintf(stdout, " and the react step of %s (the original is %s.orig)", o.Model, plan.EnsemblePath)
	}
	fmt.Fprintln(stdout, ".")
	if ro == nil {
		fmt.Fprintf(stdout, "Load %s before %s (docs/upgrade.md, \"Rolling out\"), or run again with --rollout.\n", plan.React, o.Model)
		return nil
	}
	return ro.Run(context.Background(), plan.React, plan.Version, o.Model)
}
