package fit

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mergectl/react-triton/config"
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/partialfile"
)

// MergeShards loads the files of calibrate fit --shard i/n, checks that
// they are the n shards of one fit (the same run, D, backbone, β,
// normalisation, tasks and experts; each finished; none missing or twice)
// and adds them in shard order, whatever the order of paths: calibrate
// merge for a fit's shards.
func MergeShards(paths []string) (*react.Components, error) {
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
				return nil, fmt.Errorf("task %s: expert %s in %s but %s in %s", t.Name, DescribeModel(t0.Expert), paths[order[0]-1], DescribeModel(t.Expert), paths[o-1])
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
