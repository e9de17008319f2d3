package fit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/mergectl/react-triton/calibrate/embeddings"
	"github.com/mergectl/react-triton/calibrate/images"
	"github.com/mergectl/react-triton/calibrate/pairs"
	"github.com/mergectl/react-triton/calibrate/progress"
	"github.com/mergectl/react-triton/calibrate/tritonpairs"
	"github.com/mergectl/react-triton/config"
	"github.com/mergectl/react-triton/internal/cli"
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/componentsfile"
	"github.com/mergectl/react-triton/react/partialfile"
	"github.com/mergectl/react-triton/triton"
)

// Options are what a fit takes besides its configuration.
type Options struct {
	// Resume continues from the checkpoints of an earlier run of the same
	// fit (checkpoint.dir); without it a fit refuses to start over them.
	Resume bool
	// Stdout receives the summary of each task (and of --beta auto),
	// Stderr the progress, retries and skipped files.
	Stdout, Stderr io.Writer
}

// Run fits the tasks cfg names into its output file, as calibrate fit
// does: it opens and checks every task's source (.npy embeddings, or the
// models on Triton) before any sample is read, accumulates each task's
// sums with checkpoints, chooses β with beta_select.auto, writes the
// components file (or the partial-statistics file of a shard, or one task
// into cfg.Into) and removes the checkpoints. SIGINT and SIGTERM end it
// after saving a checkpoint. A problem of the configuration's values
// (an expert with no task) is a usage error (internal/cli).
func Run(ctx context.Context, cfg *config.Calibrate, o Options) error {
	r := &fitRun{cfg: cfg, resume: o.Resume, stdout: o.Stdout, stderr: o.Stderr}
	return r.run(ctx)
}

// fitRun is one run of calibrate fit.
type fitRun struct {
	cfg            *config.Calibrate
	resume         bool
	stdout, stderr io.Writer

	norm     react.Normalization
	shard    pairs.Shard
	report   progress.Reporter
	backbone react.ModelRef // as used, once a task has run
	from     string         // the task that set backbone
}

// ckptPath is the checkpoint file of a task.
func (r *fitRun) ckptPath(task string) string {
	return filepath.Join(r.cfg.Checkpoint.Dir, task+".safetensors")
}

func (r *fitRun) run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := r.cfg
	r.norm = react.Normalization(cfg.Normalize)
	if cfg.Shard != "" {
		s, _ := config.ParseShard(cfg.Shard) // validated
		r.shard = pairs.Shard{Index: s.Index, Count: s.Count}
	}
	var into *react.Components
	if cfg.Only != "" {
		var err error
		if into, err = componentsfile.Load(cfg.Into); err != nil {
			return err
		}
	}
	if err := r.checkCheckpoints(); err != nil {
		return err
	}
	srcs, closeAll, err := r.open(ctx)
	if err != nil {
		return err
	}
	defer closeAll()
	if into != nil && into.D != srcs[0].Dim() {
		return fmt.Errorf("--into %s: its tasks have D=%d, but task %s's features have D=%d", cfg.Into, into.D, cfg.Only, srcs[0].Dim())
	}
	r.report = progress.New(cfg.Progress, r.stderr)

	var tasks []*partialfile.Task
	var sums []taskSummary
	for _, src := range srcs {
		t, sum, err := r.fitTask(ctx, src)
		if err != nil {
			return err
		}
		tasks = append(tasks, t)
		sums = append(sums, sum)
	}
	for _, s := range sums {
		fmt.Fprintln(r.stdout, s)
	}
	if cfg.BetaSelect.Auto {
		if err := r.selectBeta(ctx, tasks); err != nil {
			return err
		}
	}
	if err := r.write(tasks, into); err != nil {
		return err
	}
	r.removeCheckpoints(tasks)
	return nil
}

// checkCheckpoints refuses to start over a checkpoint of an earlier run
// unless --resume says to continue it.
func (r *fitRun) checkCheckpoints() error {
	dir := r.cfg.Checkpoint.Dir
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if r.resume {
			fmt.Fprintf(r.stderr, "calibrate: no checkpoint in %s: starting from the beginning\n", dir)
		}
		return nil
	case err != nil:
		return fmt.Errorf("checkpoints: %w", err)
	case len(entries) > 0 && !r.resume:
		return fmt.Errorf("checkpoints: %s holds the checkpoints of an earlier run: add --resume to continue it, or delete it to start over", dir)
	}
	return nil
}

// removeCheckpoints removes the checkpoints of a run that wrote its output,
// and their directory once empty.
func (r *fitRun) removeCheckpoints(tasks []*partialfile.Task) {
	for _, t := range tasks {
		path := r.ckptPath(t.Name)
		os.Remove(path)
		// What a write cut short by a kill left (internal/atomicfile's
		// temporary files).
		stale, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*"))
		for _, s := range stale {
			os.Remove(s)
		}
	}
	os.Remove(r.cfg.Checkpoint.Dir) // fails, harmlessly, if anything else is in it
}

// subset is the configured subset of each task's samples.
func (r *fitRun) subset() pairs.Subset {
	s := r.cfg.Sample
	return pairs.Subset{Fraction: s.Fraction, Limit: s.Limit, Seed: s.Seed}
}

// tasks returns the tasks the configuration names: only, or tasks (empty
// for every task found).
func (r *fitRun) tasks() []string {
	if r.cfg.Only != "" {
		return []string{r.cfg.Only}
	}
	return r.cfg.Tasks
}

// experts returns the configured experts of the tasks fitted.
func (r *fitRun) experts() map[string]react.ModelRef {
	m := make(map[string]react.ModelRef, len(r.cfg.Experts))
	for task, e := range r.cfg.Experts {
		if r.cfg.Only == "" || task == r.cfg.Only {
			m[task] = react.ModelRef{Name: e.Model, Version: e.Version, Output: e.Output}
		}
	}
	return m
}

// open opens every task's source and checks them all before any sample is
// read or sent. The function it returns closes them.
func (r *fitRun) open(ctx context.Context) ([]pairs.Source, func(), error) {
	cfg := r.cfg
	experts := r.experts()
	if cfg.Triton.GRPC == "" {
		ps, err := embeddings.OpenAll(cfg.Embeddings, r.tasks())
		if err != nil {
			return nil, nil, fmt.Errorf("reading embeddings: %w", err)
		}
		srcs := make([]pairs.Source, len(ps))
		known := map[string]bool{}
		for i, p := range ps {
			srcs[i], known[p.Task()] = p, true
		}
		for task := range experts {
			if !known[task] {
				closeSources(srcs)
				return nil, nil, cli.AsUsage(fmt.Errorf("--expert: no embeddings for task %q in %s", task, cfg.Embeddings))
			}
		}
		return srcs, func() { closeSources(srcs) }, nil
	}
	client, err := triton.Dial(ctx, cfg.Triton.GRPC, triton.WithTimeout(cfg.Triton.Timeout),
		triton.WithDialOptions(grpc.WithConnectParams(grpc.ConnectParams{
			// Reconnect within a second of a restarted Triton, not
			// grpc-go's default of up to two minutes.
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
			MinConnectTimeout: 5 * time.Second,
		})))
	if err != nil {
		return nil, nil, err
	}
	tasks := r.tasks()
	if len(tasks) == 0 {
		if tasks, err = tritonpairs.DiscoverInputs(cfg.Inputs); err != nil {
			client.Close()
			return nil, nil, err
		}
	}
	if err := tritonpairs.CheckExperts(tasks, experts); err != nil {
		client.Close()
		return nil, nil, cli.AsUsage(err)
	}
	ps, err := tritonpairs.Open(ctx, client, tritonpairs.Config{
		Inputs: cfg.Inputs, Tasks: tasks, Experts: experts, Batch: cfg.Chunk, InFlight: cfg.InFlight,
		Images:        imageOptions(cfg.Images),
		SkipBadImages: cfg.Images.OnError == config.OnErrorSkip,
		SendEncoded:   cfg.Images.Decode == config.DecodeTriton,
		Backbone:      react.ModelRef{Name: cfg.Backbone.Model, Version: cfg.Backbone.Version, Output: cfg.Backbone.Output},
		RetryMaxWait:  cfg.Triton.RetryMaxWait,
		OnRetry: func(err error, wait time.Duration) {
			fmt.Fprintf(r.stderr, "calibrate: retrying in %v: %v\n", wait.Round(time.Millisecond), err)
		},
	})
	if err != nil {
		client.Close()
		return nil, nil, err
	}
	srcs := make([]pairs.Source, len(ps))
	for i, p := range ps {
		p.SetContext(ctx)
		srcs[i] = p
		for _, s := range p.Skipped() {
			fmt.Fprintf(r.stderr, "calibrate: task %s: skipped %s: %v\n", p.Task(), filepath.Join(cfg.Inputs, p.Task(), s.File), s.Err)
		}
		if n := len(p.Skipped()); n > 0 {
			fmt.Fprintf(r.stderr, "calibrate: task %s: %d image files skipped (images.on_error: skip)\n", p.Task(), n)
		}
	}
	return srcs, func() {
		closeSources(srcs)
		client.Close()
	}, nil
}

// describe says what produces a task's sums, for its checkpoint: a resume
// continues only the same run.
func (r *fitRun) describe(src pairs.Source, idx []int) string {
	sel := fmt.Sprintf("fraction %g, limit %d, seed %d, shard %q", r.cfg.Sample.Fraction, r.cfg.Sample.Limit, r.cfg.Sample.Seed, r.cfg.Shard)
	switch p := src.(type) {
	case *tritonpairs.Pair:
		return fmt.Sprintf("task %s: %s; %s; %d per request; %s",
			p.Task(), p.Inputs(), p.Models(), p.BatchSize(), sel)
	case *embeddings.Pair:
		return fmt.Sprintf("task %s: %s and %s, %d pairs of D=%d; %d per chunk; %s",
			p.Task(), p.MergedPath(), p.ExpertPath(), p.Len(), p.Dim(), r.chunkRows(src), sel)
	}
	return fmt.Sprintf("task %s: %T; %s", src.Task(), src, sel)
}

// chunkRows is the number of pairs accumulated at a time.
func (r *fitRun) chunkRows(src pairs.Source) int {
	if p, ok := src.(*tritonpairs.Pair); ok {
		return p.BatchSize() // Next never returns more than one request's samples
	}
	if r.cfg.Chunk > 0 {
		return r.cfg.Chunk
	}
	return pairs.DefaultChunkRows
}

// models names a task's models, for messages.
func models(src pairs.Source) string {
	if p, ok := src.(*tritonpairs.Pair); ok {
		return p.Models()
	}
	if p, ok := src.(*embeddings.Pair); ok {
		return fmt.Sprintf("%s and %s", p.MergedPath(), p.ExpertPath())
	}
	return src.Task()
}

// imageOptions are the configured parts of how images become samples.
func imageOptions(c config.CalibrateImages) images.Options {
	o := images.Options{Layout: c.Layout, Channels: c.Channels, Resize: c.Resize, Mean: c.Mean, Std: c.Std}
	if len(c.Size) == 2 {
		o.Height, o.Width = c.Size[0], c.Size[1]
	}
	return o
}

// closeSources closes every source.
func closeSources(srcs []pairs.Source) {
	for _, p := range srcs {
		p.Close()
	}
}
