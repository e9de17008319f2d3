package calibrate

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mergectl/react-triton/calibrate/fit"
	"github.com/mergectl/react-triton/config"
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/componentsfile"
	"github.com/mergectl/react-triton/react/heldout"
	"github.com/mergectl/react-triton/react/partialfile"
)

func newMergeCommand(stdout io.Writer) *cobra.Command {
	var out, normalize string
	var beta float64
	cmd := &cobra.Command{
		Use:   "merge PARTS... --out FILE",
		Short: "Add the partial statistics of calibrate fit --shard i/n into a components file",
		Long: `merge adds the partial-statistics files that calibrate fit --shard i/n wrote,
one per shard i = 0..n-1, into a components file: the statistics are sums, so
n shards merged equal one fit over every sample, to float64 rounding. The
parts must be every shard of the same fit (same inputs, models, chunk and
subset), each complete; they are added in shard order whatever the order
given. β and the normalisation default to the parts'.`,
		Example: `  calibrate fit --config calibrate.yaml --shard 0/2 --out part0.safetensors
  calibrate fit --config calibrate.yaml --shard 1/2 --out part1.safetensors
  calibrate merge part0.safetensors part1.safetensors --out components.safetensors`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usagef("--out is required")
			}
			c, err := mergeParts(args)
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("beta") {
				if err := checkBeta(beta); err != nil {
					return asUsage(err)
				}
				c.Beta = beta
			}
			if cmd.Flags().Changed("normalize") {
				if c.Normalization, err = react.ParseNormalization(normalize); err != nil {
					return usagef("--normalize: %v", err)
				}
			}
			if err := heldout.Record(c); err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "calibrate: reconstruction error not recorded: %v\n", err)
			}
			if err := componentsfile.Save(out, c); err != nil {
				return err
			}
			for _, t := range c.Tasks {
				fmt.Fprintf(stdout, "task %s: N=%d\n", t.Name, t.N)
			}
			fmt.Fprintf(stdout, "wrote %s: %d shards of %d tasks, D=%d, beta=%s, normalization=%s\n",
				out, len(args), len(c.Tasks), c.D, formatFloat(c.Beta), c.Normalization)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&out, "out", "", "components `FILE` to write (required)")
	f.Float64Var(&beta, "beta", 0, "default β `B` of the file (default: the parts')")
	f.StringVar(&normalize, "normalize", "", "default normalisation, `sum|mean` (default: the parts')")
	return cmd
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
