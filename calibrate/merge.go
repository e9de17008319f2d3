package calibrate

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/mergectl/react-triton/calibrate/fit"
	"github.com/mergectl/react-triton/calibrate/livemerge"
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/componentsfile"
	"github.com/mergectl/react-triton/react/heldout"
	"github.com/mergectl/react-triton/react/partialfile"
)

func newMergeCommand(stdout io.Writer) *cobra.Command {
	var out, normalize, beta, base, liveDir string
	var minSamples int64
	var since time.Duration
	cmd := &cobra.Command{
		Use:   "merge FILES... --out FILE",
		Short: "Add partial statistics (a fit's shards, or the sidecars' live files) into a components file",
		Long: `merge adds partial-statistics files into a components file. The statistics
are sums, so the result equals one fit over every sample, to float64
rounding. The files are either:

  - the shards of one fit, from calibrate fit --shard i/n, i = 0..n-1: every
    shard of the same fit (same inputs, models, chunk and subset), each
    complete; they are added in shard order whatever the order given;
  - the live files the sidecars write from sampled traffic (sampling in the
    sidecar's configuration), one per replica and window: they must agree on
    D, the backbone, the default β and normalisation and each task's expert,
    and no window may be given twice. --live-dir DIR adds every live file in
    DIR (with --since D, those written in the last D). With --base FILE, a task with fewer
    than --min-samples live samples keeps its statistics from FILE (the
    components file in service), as do FILE's tasks that no live file has;
    without --base it is left out. --beta auto chooses β and the
    normalisation without labels, from the samples the sidecars held out
    (sampling.holdout), as calibrate fit --beta auto does.

β and the normalisation default to the files'. Every problem with the files
is reported at once.`,
		Example: `  calibrate fit --config calibrate.yaml --shard 0/2 --out part0.safetensors
  calibrate fit --config calibrate.yaml --shard 1/2 --out part1.safetensors
  calibrate merge part0.safetensors part1.safetensors --out components.safetensors

  calibrate merge /live/*.live.safetensors --base components-v3.safetensors \
    --min-samples 2000 --beta auto --out components-v4.safetensors`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usagef("--out is required")
			}
			if since < 0 {
				return usagef("--since: must be positive, got %v", since)
			}
			if cmd.Flags().Changed("since") && liveDir == "" {
				return usagef("--since: only with --live-dir")
			}
			if liveDir != "" {
				found, old, err := livemerge.Dir(liveDir, since, time.Now())
				if err != nil {
					return err
				}
				if old > 0 {
					fmt.Fprintf(stdout, "%s: %d live files last written more than %v ago left out\n", liveDir, old, since)
				}
				if len(found) == 0 && len(args) == 0 {
					return fmt.Errorf("--live-dir %s: no live files (*%s) written in the last %v", liveDir, partialfile.LiveSuffix, since)
				}
				args = append(args, found...)
			}
			if len(args) == 0 {
				return usagef("no files: give the files to merge, or --live-dir")
			}
			auto := beta == "auto"
			var b float64
			if cmd.Flags().Changed("beta") && !auto {
				var err error
				if b, err = strconv.ParseFloat(beta, 64); err != nil {
					return usagef("--beta: %q is not a number or auto", beta)
				}
				if err := checkBeta(b); err != nil {
					return asUsage(err)
				}
			}
			var norm react.Normalization
			if cmd.Flags().Changed("normalize") {
				var err error
				if norm, err = react.ParseNormalization(normalize); err != nil {
					return usagef("--normalize: %v", err)
				}
				if auto {
					return usagef("--normalize: not with --beta auto, which chooses the normalisation")
				}
			}
			if minSamples < 0 {
				return usagef("--min-samples: must be ≥ 0, got %d", minSamples)
			}
			live, err := livemerge.IsLive(args)
			if err != nil {
				return err
			}
			var c *react.Components
			if live {
				if c, err = mergeLive(stdout, args, base, minSamples, auto); err != nil {
					return err
				}
			} else {
				for _, f := range []string{"base", "min-samples"} {
					if cmd.Flags().Changed(f) {
						return usagef("--%s: only with the sidecars' live files", f)
					}
				}
				if auto {
					return usagef("--beta auto: only with the sidecars' live files (a fit chooses β itself: calibrate fit --beta auto)")
				}
				if c, err = fit.MergeShards(args); err != nil {
					return err
				}
				for _, t := range c.Tasks {
					fmt.Fprintf(stdout, "task %s: N=%d\n", t.Name, t.N)
				}
			}
			if cmd.Flags().Changed("beta") && !auto {
				c.Beta = b
			}
			if norm != "" {
				c.Normalization = norm
			}
			if err := heldout.Record(c); err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "calibrate: reconstruction error not recorded: %v\n", err)
			}
			if err := componentsfile.Save(out, c); err != nil {
				return err
			}
			kind := "shards"
			if live {
				kind = "live files"
			}
			fmt.Fprintf(stdout, "wrote %s: %d %s, %d tasks, D=%d, beta=%s, normalization=%s\n",
				out, len(args), kind, len(c.Tasks), c.D, formatFloat(c.Beta), c.Normalization)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&out, "out", "", "components `FILE` to write (required)")
	f.StringVar(&beta, "beta", "", "default β `B` of the file, or auto to choose it and the normalisation from the live files' held-out samples (default: the files')")
	f.StringVar(&normalize, "normalize", "", "default normalisation, `sum|mean` (default: the files')")
	f.StringVar(&base, "base", "", "live files: components `FILE` whose statistics a task keeps when it has fewer than --min-samples live samples, and whose other tasks are kept")
	f.Int64Var(&minSamples, "min-samples", 0, "live files: the fewest live samples `N` a task's live statistics need (below: --base's, or left out)")
	f.StringVar(&liveDir, "live-dir", "", "add every live file (*"+partialfile.LiveSuffix+") in `DIR`, as the sidecars write them (sampling.checkpoint.dir)")
	f.DurationVar(&since, "since", 0, "with --live-dir: only the files last written within `D` (0: all)")
	return cmd
}

// mergeLive merges the sidecars' live files and says what it did with
// each task.
func mergeLive(stdout io.Writer, paths []string, basePath string, minSamples int64, auto bool) (*react.Components, error) {
	files, err := livemerge.Load(paths)
	if err != nil {
		return nil, err
	}
	opt := livemerge.Options{MinSamples: minSamples, BetaAuto: auto}
	if basePath != "" {
		if opt.Base, err = componentsfile.Load(basePath); err != nil {
			return nil, fmt.Errorf("--base: %w", err)
		}
	}
	res, err := livemerge.Merge(files, opt)
	if err != nil {
		return nil, err
	}
	res.Print(stdout, basePath, minSamples)
	return res.Components, nil
}
