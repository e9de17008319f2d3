package calibrate

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mergectl/react-triton/calibrate/fit"
	"github.com/mergectl/react-triton/calibrate/livemerge"
	"github.com/mergectl/react-triton/config"
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
				found, old, err := liveFiles(liveDir, since, time.Now())
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
			live, err := isLive(args)
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
				if c, err = mergeParts(args); err != nil {
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

// liveFiles returns the live files directly in dir, in name order, last
// written within since of now (all when since is 0), and how many older
// ones it left out.
func liveFiles(dir string, since time.Duration, now time.Time) (found []string, old int, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, 0, fmt.Errorf("--live-dir: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), partialfile.LiveSuffix) {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return nil, 0, fmt.Errorf("--live-dir: %w", err)
		}
		if since > 0 && now.Sub(info.ModTime()) > since {
			old++
			continue
		}
		found = append(found, filepath.Join(dir, e.Name()))
	}
	return found, old, nil
}

// isLive reads the files' headers and reports whether they are the
// sidecars' live files (all of them) or a fit's shards (none).
func isLive(paths []string) (bool, error) {
	var live, shards []string
	for _, p := range paths {
		replica, err := partialfile.ReadReplica(p)
		if err != nil {
			return false, err
		}
		if replica != "" {
			live = append(live, p)
		} else {
			shards = append(shards, p)
		}
	}
	if len(live) > 0 && len(shards) > 0 {
		return false, fmt.Errorf("%s is a live file but %s is not (a fit's shard or checkpoint): merge them apart", live[0], shards[0])
	}
	return len(live) > 0, nil
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
	for _, t := range res.Tasks {
		switch t.Source {
		case livemerge.Live:
			fmt.Fprintf(stdout, "task %s: N=%d from %d live files (%d held out)\n", t.Name, t.Live, t.Files, t.Held)
		case livemerge.Base:
			if t.Files == 0 {
				fmt.Fprintf(stdout, "task %s: kept from %s (no live samples)\n", t.Name, basePath)
			} else {
				fmt.Fprintf(stdout, "task %s: kept from %s (%d live samples < --min-samples %d)\n", t.Name, basePath, t.Live, minSamples)
			}
		default:
			fmt.Fprintf(stdout, "task %s: left out (%d live samples < --min-samples %d, and no --base)\n", t.Name, t.Live, minSamples)
		}
	}
	if auto {
		fmt.Fprintln(stdout, "beta auto: held-out relative reconstruction error of the live tasks, one-hot + equal:")
		for k, c := range res.Candidates {
			mark := ""
			if k == res.Chosen {
				mark = "  ← chosen"
			}
			fmt.Fprintf(stdout, "  %-4s β=%-7s %.5f + %.5f = %.5f%s\n", c.Normalization, formatFloat(c.Beta), c.OneHot, c.Equal, c.Score, mark)
		}
	}
	return res.Components, nil
}

// mergeParts loads the shards' files, checks that they are the n shards of
// one fit, and adds them in shard order.
func mergeParts(paths []string) (*react.Components, error) {
	parts := make([]*partialfile.File, len(paths))
	shards := make([]config.Shard, len(paths))
	for i, path := range paths {
		f, err := partialfile.Load(path)
		if err != nil {
			return nil, err
		}
		if f.Shard == "" {
			return nil, fmt.Errorf("%s: not a shard (a checkpoint?): merge adds the files of calibrate fit --shard i/n", path)
		}
		if shards[i], err = config.ParseShard(f.Shard); err != nil {
			return nil, fmt.Errorf("%s: shard %w", path, err)
		}
		for _, t := range f.Tasks {
			if !t.Complete() {
				return nil, fmt.Errorf("%s: task %s holds %d of its %d samples: the shard's fit did not finish", path, t.Name, t.Done, t.Total)
			}
		}
		parts[i] = f
	}
	n := shards[0].Count
	order := make([]int, n) // order[k]: the part of shard k, +1
	for i, s := range shards {
		first := parts[0]
		switch f := parts[i]; {
		case s.Count != n:
			return nil, fmt.Errorf("%s is shard %s but %s is shard %s: the parts must split the samples the same way", paths[i], s, paths[0], shards[0])
		case order[s.Index] != 0:
			return nil, fmt.Errorf("%s and %s are both shard %s", paths[order[s.Index]-1], paths[i], s)
		case f.Run != first.Run:
			return nil, fmt.Errorf("%s and %s are shards of different fits:\n  %s\n  %s", paths[0], paths[i], first.Run, f.Run)
		case f.D != first.D || f.Backbone != first.Backbone || f.Beta != first.Beta || f.Normalization != first.Normalization:
			return nil, fmt.Errorf("%s and %s differ in D, backbone, β or normalisation", paths[0], paths[i])
		case !slices.Equal(taskNames(f), taskNames(first)):
			return nil, fmt.Errorf("%s has tasks %s but %s has %s", paths[0], strings.Join(taskNames(first), ","), paths[i], strings.Join(taskNames(f), ","))
		}
		order[s.Index] = i + 1
	}
	var missing []string
	for k, o := range order {
		if o == 0 {
			missing = append(missing, config.Shard{Index: k, Count: n}.String())
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("shard %s missing: merge needs all %d shards", strings.Join(missing, ", "), n)
	}
	first := parts[order[0]-1]
	c := &react.Components{D: first.D, Beta: first.Beta, Normalization: first.Normalization, Backbone: first.Backbone}
	for ti, t0 := range first.Tasks {
		acc := react.NewAccumulator(first.D)
		for _, o := range order {
			t := parts[o-1].Tasks[ti]
			if t.Expert != t0.Expert {
				return nil, fmt.Errorf("task %s: expert %s in %s but %s in %s", t.Name, fit.DescribeModel(t0.Expert), paths[order[0]-1], fit.DescribeModel(t.Expert), paths[o-1])
			}
			if err := acc.Merge(t.Acc); err != nil {
				return nil, fmt.Errorf("task %s: %w", t.Name, err)
			}
		}
		st, err := acc.Stats(t0.Name, t0.Expert)
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", t0.Name, err)
		}
		st.Provenance = t0.Provenance
		if st.Provenance != nil {
			st.Provenance["subset.used"] = fmt.Sprint(st.N)
		}
		c.Tasks = append(c.Tasks, st)
	}
	return c, nil
}

func taskNames(f *partialfile.File) []string {
	names := make([]string, len(f.Tasks))
	for i, t := range f.Tasks {
		names[i] = t.Name
	}
	return names
}
