package calibrate

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mergectl/react-triton/calibrate/progress"
	"github.com/mergectl/react-triton/config"
	"github.com/mergectl/react-triton/evaluate"
	"github.com/mergectl/react-triton/evaluate/figures"
	"github.com/mergectl/react-triton/internal/atomicfile"
	"github.com/mergectl/react-triton/problem"
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/componentsfile"
	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/modelinfo"
)

type evalOptions struct {
	loaded       []*evaluate.Task // the tasks config opened, closed by run
	triton       string
	data         string
	tasks        []string
	components   []string
	head         string
	sets         []string
	aggregations []string
	betas        []float64
	norms        []string
	oracle       bool
	limit        int
	seed         uint64
	markdown     string
	json         string
	plots        string
	progress     string
	batch        int
	inFlight     int
	timeout      time.Duration

	sidecar          string
	sidecarModels    []string
	sidecarTolerance float64
}

func newEvalCommand(stdout, stderr io.Writer) *cobra.Command {
	o := &evalOptions{}
	cmd := &cobra.Command{
		Use:   "eval --triton HOST:PORT --data DIR --components [LABEL=]FILE... [flags]",
		Short: "Measure per-task accuracy, hypervolume and uniformity of preferences on labelled data, through Triton",
		Long: `eval measures what preferences do: each task's test accuracy through the
merged backbone corrected by W_p, next to the uncorrected backbone and each
task's expert, and for each preference set its hypervolume (HV) and
uniformity (U) on normalised accuracies (accuracy / expert accuracy).

--data DIR holds each task's labelled evaluation data: DIR/<task>.npy, the
inputs as the backbone takes them (samples first, of the input's datatype,
or float32/float64 for a floating-point input), or DIR/<task>.npz with one
array per input named as the input for a model of several inputs, and
DIR/<task>.labels.npy, one class index per sample (int64, int32 or uint8). --limit N takes a
seeded random subset of N samples per task (--seed), never the first N.

Each --components [LABEL=]FILE is a components file of one backbone; the
backbone model and each task's expert are the ones the file records. The
LABEL (default: the backbone model's name) names its rows. Several files
may share a backbone (e.g. fitted on different fractions of the
calibration data): its features are extracted once.

Features are extracted once per backbone and expert, through Triton, and
reused for every preference; the heads (--head, {task} replaced by the
task) run on Triton in batches.

Preference sets (--set, repeatable; default equal, priority, one-hot):
` + indent(evaluate.SetHelp) + `

Ablations: --aggregation react,naive,polar; --betas and --normalizations
take lists and override each file's defaults (every combination is
evaluated);
--oracle adds ReACT fitted on the evaluation data's own features, the
ceiling of a linear correction no user can reach.

Output: Markdown tables on stdout (or --markdown FILE); with --json FILE,
every number as JSON; with --plots DIR, PNG figures: each pairwise set's
trade-off curves (pairwise-A-B.png), a heat map of each simplex set
(simplex-A-B-C.png), accuracy against β (beta.png, with two or more β) and
against the calibration data's size (fraction.png, with files of one
backbone fitted on different numbers of samples).

End to end through the sidecar: --sidecar HOST:PORT (its gRPC address)
also sends each task's inputs to its controllable model there
(--sidecar-model, {task} replaced by the task) at every preference of the
sets, in the react-preference header, and once with "none", and compares
the logits with the ones evaluated in process at the same preference,
with the β and normalisation of the components file the sidecar serves
there. --sidecar-model [LABEL=]PATTERN is repeatable, one per components
file the sidecar serves (LABEL, default the first --components). The
comparison is a
table and the "served" JSON; eval fails (exit 1) when some logit differs
by more than --sidecar-tolerance times the largest logit.`,
		Example: `  calibrate eval --triton localhost:8001 --data test/ \
      --components AdaMerging=tritonmodels/zoo/components.safetensors \
      --components TA=tritonmodels/zoo/components_ta.safetensors \
      --set equal --set one-hot --set simplex:fashion,mnist,digits --json eval.json`,
		Args: cobra.NoArgs,
	}
	f := cmd.Flags()
	f.StringVar(&o.triton, "triton", "", "Triton's gRPC HOST:PORT (required)")
	f.StringVar(&o.data, "data", "", "directory of <task>.npy inputs and <task>.labels.npy labels (required)")
	f.StringSliceVar(&o.tasks, "tasks", nil, "tasks to evaluate, in order (default: the first components file's)")
	f.StringArrayVar(&o.components, "components", nil, "[LABEL=]FILE: a components file to evaluate (repeatable, required)")
	f.StringVar(&o.head, "head", "head_{task}", "the head model of each task; {task} is replaced by the task")
	f.StringArrayVar(&o.sets, "set", nil, "a preference set (repeatable; default equal, priority and one-hot)")
	f.StringSliceVar(&o.aggregations, "aggregation", []string{evaluate.AggReACT}, "aggregations to compare: react, naive, polar")
	config.Float64ListVar(f, &o.betas, "betas", nil, "β values to evaluate, comma-separated or repeated (default: each file's)")
	f.StringSliceVar(&o.norms, "normalizations", nil, "normalisations to evaluate, sum and/or mean (default: each file's)")
	// The spellings before --betas and --normalizations, for the
	// command line alone: --beta and --normalize are one value in fit,
	// solve and upgrade, and so are the keys beta and normalize.
	config.DeprecatedAlias(f, "beta", "betas", stderr, "calibrate: eval --beta is deprecated: use --betas (--beta is one β in fit, solve and upgrade)")
	config.DeprecatedAlias(f, "normalize", "normalizations", stderr, "calibrate: eval --normalize is deprecated: use --normalizations (--normalize is one normalisation in fit, solve and upgrade)")
	f.BoolVar(&o.oracle, "oracle", false, "add ReACT fitted on the evaluation features themselves (the linear ceiling)")
	f.IntVar(&o.limit, "limit", 0, "at most N samples per task, a seeded random subset (0: all)")
	f.Uint64Var(&o.seed, "seed", 0, "seed of --limit's subset")
	f.StringVar(&o.markdown, "markdown", "", "write the Markdown tables to FILE instead of stdout")
	f.StringVar(&o.json, "json", "", "also write every number as JSON to FILE")
	f.StringVar(&o.plots, "plots", "", "also draw the figures the result supports as PNG files in DIR (docs/evaluate.md)")
	config.BindProgressFlags(f)
	f.IntVar(&o.batch, "batch", modelinfo.DefaultBatch, "samples per request (the models' max_batch_size caps it)")
	f.IntVar(&o.inFlight, "in-flight", modelinfo.DefaultInFlight, "requests in flight at once")
	f.DurationVar(&o.timeout, "timeout", time.Minute, "timeout of one request")
	f.StringVar(&o.sidecar, "sidecar", "", "also evaluate end to end through the sidecar at this gRPC HOST:PORT, and compare")
	f.StringArrayVar(&o.sidecarModels, "sidecar-model", nil, "[LABEL=]PATTERN: each task's controllable model on the sidecar that serves the --components LABEL (default the first); {task} is replaced by the task (repeatable; default {task})")
	f.Float64Var(&o.sidecarTolerance, "sidecar-tolerance", 1e-4, "largest |served − evaluated| logit allowed, relative to the largest logit")
	cmd.RunE = layered(cmd, evalFlags, stdout, nil, func(cmd *cobra.Command, _ []string) error {
		return o.run(cmd.Context(), cmd.Flags(), stdout, stderr)
	})
	return cmd
}

// evalFlags are eval's keys: the flags it shares with fit by their keys
// there (--triton is triton.grpc, --timeout triton.timeout, --limit and
// --seed sample.limit and sample.seed).
var evalFlags = config.CommandFlags{
	Keys: map[string]string{
		"triton": "triton.grpc", "timeout": "triton.timeout",
		"limit": "sample.limit", "seed": "sample.seed",
	},
	Paths:    []string{"data", "components", "markdown", "json", "plots"},
	Labelled: []string{"components"},
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}

// config checks the flags and reads the inputs, before any model runs.
// Its usage errors are problem.Lists, every problem of a stage at once:
// first those of the flags alone (flagProblems); then, with the
// components files read, those of the flags that name their tasks or
// labels (--set, --sidecar-model), before any task's data is read.
func (o *evalOptions) config(fs *pflag.FlagSet) (*evaluate.Config, error) {
	cfg := &evaluate.Config{Aggregations: o.aggregations, Betas: o.betas, Oracle: o.oracle, Heads: map[string]react.ModelRef{}}
	if err := o.flagProblems(fs, cfg).Err(); err != nil {
		return nil, asUsage(err)
	}
	for _, spec := range o.components {
		label, path, ok := strings.Cut(spec, "=")
		if !ok {
			label, path = "", spec
		}
		c, err := componentsfile.Load(path)
		if err != nil {
			return nil, fmt.Errorf("--components %s: %w", spec, err)
		}
		if label == "" {
			label = c.Backbone.Name
		}
		cfg.Backbones = append(cfg.Backbones, evaluate.Backbone{Label: label, Components: c})
	}
	tasks := o.tasks
	if len(tasks) == 0 {
		tasks = cfg.Backbones[0].Components.TaskNames()
	}
	if err := o.taskProblems(cfg, tasks).Err(); err != nil {
		return nil, asUsage(err)
	}
	for _, t := range tasks {
		task, err := evaluate.LoadTask(o.data, t)
		if err != nil {
			o.closeTasks()
			return nil, fmt.Errorf("--data: %w", err)
		}
		o.loaded = append(o.loaded, task)
		cfg.Tasks = append(cfg.Tasks, task.Subset(o.limit, o.seed))
		cfg.Heads[t] = react.ModelRef{Name: strings.ReplaceAll(o.head, "{task}", t)}
	}
	return cfg, nil
}

// flagProblems checks the flags that need no file, every one, and sets
// o.progress and cfg.Norms from theirs. Each problem names its flag.
func (o *evalOptions) flagProblems(fs *pflag.FlagSet, cfg *evaluate.Config) problem.List {
	var l problem.List
	var err error
	if o.progress, err = config.ProgressFlag(fs); err != nil {
		l.Add("", "%v", err)
	}
	for _, req := range []struct{ flag, value string }{{"triton", o.triton}, {"data", o.data}} {
		if req.value == "" {
			l.Add("", "--%s is required", req.flag)
		}
	}
	if len(o.components) == 0 {
		l.Add("", "--components is required")
	}
	if o.limit < 0 {
		l.Add("", "--limit must be ≥ 0, got %d", o.limit)
	}
	if o.batch <= 0 || o.inFlight <= 0 {
		l.Add("", "--batch and --in-flight must be > 0")
	}
	if !strings.Contains(o.head, "{task}") {
		l.Add("", "--head %q: want a pattern with {task}", o.head)
	}
	if o.sidecar == "" && len(o.sidecarModels) > 0 {
		l.Add("", "--sidecar-model needs --sidecar")
	}
	if !(o.sidecarTolerance >= 0) {
		l.Add("", "--sidecar-tolerance must be ≥ 0, got %g", o.sidecarTolerance)
	}
	for _, n := range o.norms {
		norm, err := react.ParseNormalization(n)
		if err != nil {
			l.Add("--normalizations", "%v", err)
			continue
		}
		cfg.Norms = append(cfg.Norms, norm)
	}
	for _, a := range o.aggregations {
		if !slices.Contains([]string{evaluate.AggReACT, evaluate.AggNaive, evaluate.AggPolar}, a) {
			l.Add("", "--aggregation %q: want react, naive or polar", a)
		}
	}
	for _, b := range o.betas {
		if err := react.ValidateBeta(b); err != nil {
			l.Add("--betas", "%v", err)
		}
	}
	return l
}

// taskProblems checks the flags that name the tasks or the components
// files' labels, --sidecar-model and --set, every one, and sets cfg.Served
// and cfg.Sets from theirs.
func (o *evalOptions) taskProblems(cfg *evaluate.Config, tasks []string) problem.List {
	var l problem.List
	if o.sidecar != "" {
		specs := o.sidecarModels
		if len(specs) == 0 {
			specs = []string{"{task}"}
		}
		for _, spec := range specs {
			label, pattern, ok := strings.Cut(spec, "=")
			if !ok {
				label, pattern = "", spec
			}
			if label != "" && !slices.ContainsFunc(cfg.Backbones, func(b evaluate.Backbone) bool { return b.Label == label }) {
				l.Add("", "--sidecar-model %q: no --components is labelled %q", spec, label)
				continue
			}
			if pattern == "" {
				l.Add("", "--sidecar-model %q: no model", spec)
				continue
			}
			s := evaluate.Served{Backbone: label, Heads: map[string]react.ModelRef{}}
			for _, t := range tasks {
				s.Heads[t] = react.ModelRef{Name: strings.ReplaceAll(pattern, "{task}", t)}
			}
			cfg.Served = append(cfg.Served, s)
		}
	}
	sets := o.sets
	if len(sets) == 0 {
		sets = []string{"equal", "priority", "one-hot"}
	}
	for _, s := range sets {
		set, err := evaluate.ParseSet(s, tasks)
		if err != nil {
			l.Add("--set", "%v", err)
			continue
		}
		cfg.Sets = append(cfg.Sets, set)
	}
	return l
}

// closeTasks closes the tasks' input files config opened.
func (o *evalOptions) closeTasks() {
	for _, t := range o.loaded {
		t.Close()
	}
	o.loaded = nil
}

func (o *evalOptions) run(ctx context.Context, fs *pflag.FlagSet, stdout, stderr io.Writer) error {
	cfg, err := o.config(fs)
	defer o.closeTasks()
	if err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	client, err := triton.Dial(ctx, o.triton, triton.WithTimeout(o.timeout))
	if err != nil {
		return err
	}
	defer client.Close()
	if len(cfg.Served) > 0 {
		side, err := triton.Dial(ctx, o.sidecar, triton.WithTimeout(o.timeout))
		if err != nil {
			return fmt.Errorf("--sidecar: %w", err)
		}
		defer side.Close()
		models := &evaluate.Triton{Client: side, Batch: o.batch, InFlight: o.inFlight}
		for k := range cfg.Served {
			cfg.Served[k].Models = models
		}
	}
	if o.progress != config.ProgressNever {
		rep, last := progress.New(o.progress, stderr), 0
		cfg.Progress = func(done, total int) {
			if last == 0 {
				rep.Start("eval", 0, int64(total))
			}
			rep.Add(done - last)
			if last = done; done == total {
				rep.End()
			}
		}
	}
	res, err := evaluate.Run(ctx, &evaluate.Triton{Client: client, Batch: o.batch, InFlight: o.inFlight}, cfg)
	if err != nil {
		return err
	}
	if o.json != "" {
		b, err := json.MarshalIndent(res, "", " ")
		if err != nil {
			return err
		}
		if err := atomicfile.Write(o.json, 0o644, func(w io.Writer) error {
			_, err := w.Write(append(b, '\n'))
			return err
		}); err != nil {
			return fmt.Errorf("--json: %w", err)
		}
	}
	if o.plots != "" {
		paths, err := figures.Write(res, o.plots)
		if err != nil {
			return fmt.Errorf("--plots: %w", err)
		}
		for _, p := range paths {
			fmt.Fprintf(stderr, "eval: wrote %s\n", p)
		}
	}
	out := stdout
	if o.markdown != "" {
		f, err := os.Create(o.markdown)
		if err != nil {
			return fmt.Errorf("--markdown: %w", err)
		}
		defer f.Close()
		out = f
	}
	if err := res.WriteMarkdown(out); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "eval: features %.1fs, heads %.1fs, %d solves (%.2f ms each), correction %.2f µs per sample\n",
		res.Timings.Features, res.Timings.Heads, res.Timings.Solves, 1e3*res.Timings.SolveMean, 1e6*res.Timings.CorrectPerSample)
	if len(cfg.Served) > 0 {
		if err := res.CheckServed(o.sidecarTolerance); err != nil {
			return err
		}
		worst := 0.0
		for _, c := range res.Served {
			worst = max(worst, c.Relative())
		}
		fmt.Fprintf(stderr, "eval: served through the sidecar at %s as evaluated: %d checks in %.1fs, logits within %.2g of the largest\n",
			o.sidecar, len(res.Served), res.Timings.Served, worst)
	}
	return nil
}
