package fit

import (
	"fmt"
	"os"
	"strconv"

	"github.com/mergectl/react-triton/calibrate/pairs"
	"github.com/mergectl/react-triton/calibrate/tritonpairs"
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/componentsfile"
	"github.com/mergectl/react-triton/react/heldout"
	"github.com/mergectl/react-triton/react/partialfile"
)

// expertOf returns a task's expert as used: with Triton, its output
// resolved and the version that answered.
func (r *fitRun) expertOf(src pairs.Source) react.ModelRef {
	if p, ok := src.(*tritonpairs.Pair); ok {
		return p.Expert()
	}
	return r.experts()[src.Task()]
}

// backboneOf returns the backbone as a task used it.
func (r *fitRun) backboneOf(src pairs.Source) react.ModelRef {
	if p, ok := src.(*tritonpairs.Pair); ok {
		return p.Backbone()
	}
	b := r.cfg.Backbone
	return react.ModelRef{Name: b.Model, Version: b.Version, Output: b.Output}
}

// checkBackbone checks that every task used the same backbone: each task
// checks that one version answered all its chunks, and across tasks the
// version must not change either.
func (r *fitRun) checkBackbone(src pairs.Source) error {
	b := r.backboneOf(src)
	if r.from != "" && b != r.backbone {
		return fmt.Errorf("task %s: backbone model %q answered as version %s, but as version %s for task %s: the model changed during calibration; pin --backbone-version",
			src.Task(), b.Name, b.Version, r.backbone.Version, r.from)
	}
	r.backbone, r.from = b, src.Task()
	return nil
}

// mkdirSave runs save once the checkpoint directory exists.
func (r *fitRun) mkdirSave(save func() error) error {
	if err := os.MkdirAll(r.cfg.Checkpoint.Dir, 0o755); err != nil {
		return fmt.Errorf("checkpoints: %w", err)
	}
	return save()
}

// write writes the run's output: with a shard, the partial statistics of
// every task; with --only, into with the task added or replaced; else a
// components file of every task.
func (r *fitRun) write(tasks []*partialfile.Task, into *react.Components) error {
	cfg := r.cfg
	if cfg.Shard != "" {
		f := &partialfile.File{D: tasks[0].Acc.D(), Beta: cfg.Beta, Normalization: r.norm, Backbone: r.backbone,
			Run: r.shardRun(), Shard: cfg.Shard, Tasks: tasks}
		if err := partialfile.Save(cfg.Out, f); err != nil {
			return err
		}
		fmt.Fprintf(r.stdout, "wrote %s: shard %s of %d tasks, D=%d (partial statistics: add the shards with calibrate merge)\n",
			cfg.Out, cfg.Shard, len(tasks), f.D)
		return nil
	}
	c := &react.Components{D: tasks[0].Acc.D(), Beta: cfg.Beta, Normalization: r.norm, Backbone: r.backbone}
	for _, t := range tasks {
		st, err := t.Acc.Stats(t.Name, t.Expert)
		if err != nil {
			return fmt.Errorf("task %s: %w", t.Name, err)
		}
		st.Provenance = t.Provenance
		c.Tasks = append(c.Tasks, st)
	}
	if into != nil {
		if into.Backbone != c.Backbone {
			return fmt.Errorf("--into %s: its tasks were calibrated against backbone %s, but task %s against %s: refit them all, or use the same backbone",
				cfg.Into, DescribeModel(into.Backbone), cfg.Only, DescribeModel(c.Backbone))
		}
		st := c.Tasks[0]
		replaced := false
		for i, t := range into.Tasks {
			if t.Name == st.Name {
				into.Tasks[i], replaced = st, true
			}
		}
		if !replaced {
			into.Tasks = append(into.Tasks, st)
		}
		c = into // keeps into's default β and normalisation
	}
	names := c.TaskNames()
	if into != nil {
		names = []string{cfg.Only} // the others' are into's, at the same options
	}
	if err := heldout.Record(c, names...); err != nil {
		fmt.Fprintf(r.stderr, "calibrate: reconstruction error not recorded: %v\n", err)
	}
	if err := componentsfile.Save(cfg.Out, c); err != nil {
		return err
	}
	noun := "tasks"
	if len(c.Tasks) == 1 {
		noun = "task"
	}
	fmt.Fprintf(r.stdout, "wrote %s: %d %s, D=%d, beta=%s, normalization=%s, linear algebra %s\n",
		cfg.Out, len(c.Tasks), noun, c.D, formatFloat(c.Beta), c.Normalization, react.CPUBackend())
	return nil
}

// shardRun describes what a shard's sums come from, whichever the shard:
// calibrate merge adds only shards of the same run.
func (r *fitRun) shardRun() string {
	cfg := r.cfg
	src := "embeddings " + cfg.Embeddings
	if cfg.Triton.GRPC != "" {
		src = fmt.Sprintf("inputs %s, backbone %s", cfg.Inputs, DescribeModel(r.backbone))
	}
	return fmt.Sprintf("%s; chunk %d; fraction %g, limit %d, seed %d", src, cfg.Chunk, cfg.Sample.Fraction, cfg.Sample.Limit, cfg.Sample.Seed)
}

// DescribeModel names a model with its version and output, as fit and
// merge say it in their messages.
func DescribeModel(m react.ModelRef) string {
	return fmt.Sprintf("%q version %q output %q", m.Name, m.Version, m.Output)
}

// formatFloat writes v in the shortest form that reads back the same.
func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
