package calibrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/triton"
)

// fitOptions are the flags of calibrate fit.
type fitOptions struct {
	embeddings    string
	triton        string
	inputs        string
	out           string
	beta          float64
	normalize     string
	tasks         []string
	backbone      react.ModelRef
	experts       []string
	progress      bool
	chunk         int
	normalization react.Normalization
	expertRefs    map[string]react.ModelRef
}

func newFitCommand(stdout, stderr io.Writer) *cobra.Command {
	o := &fitOptions{}
	cmd := &cobra.Command{
		Use:   "fit (--embeddings DIR | --triton HOST:PORT --inputs DIR ...) --out FILE [flags]",
		Short: "Fit per-task statistics from paired embeddings, or from models on Triton, into a components file",
		Long: `fit reads, for each task, the merged backbone's features and the task
expert's features of the same unlabeled calibration inputs, and writes the
statistics ReACT needs to a components file. The features come either from
.npy files (--embeddings) or from the models themselves, run on a Triton
server (--triton).

With --embeddings, DIR must hold two files per task:
  DIR/<task>.merged.npy   the merged backbone's features
  DIR/<task>.expert.npy   the task expert's features
Each is an N×D array of float32 or float64 in C order, one sample per row;
row i of both files comes from the same input. Tasks are every name found
in DIR, in sorted order, or those listed with --tasks, in that order.

With --triton HOST:PORT (gRPC), --inputs DIR holds each task's unlabeled
calibration inputs, DIR/<task>.npy: float32 in C order, samples along the
first axis, then the shape of one input of the models without the batch
dimension (e.g. N×1×28×28). Each chunk of samples goes to the merged
backbone (--backbone-model, --backbone-version, --backbone-output) and to
the task's expert (--expert task=model[:version[:output]], one per task) at
the same time, with a few chunks in flight; their feature outputs, FP32,
FP16, BF16 or FP64, are the pairs. An omitted output means the model's only
output (for an expert, else the output named like the backbone's). Requests
carry at most --chunk samples (default 256), and never more than a model's
max_batch_size. The models' names, the output used and the versions that
answered are recorded in the file.

Everything is checked before any data is read or sent: with --embeddings,
the files (pairs present, dtypes, shapes, sizes, the same D everywhere);
with --triton, the input files, that every task has an expert, that the
server is reachable and every model ready, that each model's input takes
the samples' shape and datatype, and that the feature output exists and
has the same D for every model. Rows are then streamed in chunks, so memory
stays O(D²) whatever N is.

For each task t fit stores S_t = Σ z_ind z_mtlᵀ, G_t = Σ z_mtl z_mtlᵀ, N_t
and the orthogonal Procrustes factor W_orth_t of S_t, plus the default β and
normalisation; both can be changed later, at solve time, without refitting.
With --normalize sum (the paper's choice) β competes with sums over N_t
samples; with mean it is relative to per-sample second moments and wants a
much smaller value, such as 1e-3.`,
		Example: `  # Fit every task found in emb/ with the paper's defaults.
  calibrate fit --embeddings emb/ --out components.safetensors

  # Two tasks only, per-sample normalisation, and the models' names recorded.
  calibrate fit --embeddings emb/ --tasks cars,dtd --normalize mean --beta 1e-3 \
      --backbone-model vit_merged --backbone-version 1 --backbone-output features \
      --expert cars=vit_cars --expert dtd=vit_dtd:2:features \
      --out components.safetensors

  # Run the models on Triton: calib/cars.npy and calib/dtd.npy hold the inputs.
  calibrate fit --triton localhost:8001 --inputs calib/ \
      --backbone-model vit_merged --backbone-output features \
      --expert cars=vit_cars --expert dtd=vit_dtd:2 \
      --out components.safetensors`,
		Args: cobra.NoArgs,
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return asUsage(err)
			}
			showProgress := o.progress || isTerminal(stderr)
			return o.run(cmd.Context(), stdout, stderr, showProgress)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&o.embeddings, "embeddings", "", "read <task>.merged.npy and <task>.expert.npy from this `DIR`")
	f.StringVar(&o.triton, "triton", "", "run the models on the Triton server (gRPC) at `HOST:PORT` instead of reading --embeddings")
	f.StringVar(&o.inputs, "inputs", "", "with --triton, read each task's calibration inputs from <task>.npy in this `DIR`")
	f.StringVar(&o.out, "out", "", "components `FILE` to write (required)")
	f.Float64Var(&o.beta, "beta", 0.1, "default regulariser `B` ≥ 0 (β) that pulls each correction towards its orthogonal factor")
	f.StringVar(&o.normalize, "normalize", string(react.NormSum), "default normalisation of the statistics, `sum|mean`")
	f.StringSliceVar(&o.tasks, "tasks", nil, "comma-separated `TASKS` to fit, in this order (default: every task in --embeddings or --inputs, sorted)")
	f.StringVar(&o.backbone.Name, "backbone-model", "", "the merged backbone model's `NAME`, recorded in the file (required with --triton)")
	f.StringVar(&o.backbone.Version, "backbone-version", "", "the merged backbone model's `VERSION`, recorded in the file (default with --triton: the server's choice)")
	f.StringVar(&o.backbone.Output, "backbone-output", "", "the merged backbone's output `TENSOR` holding the features, recorded in the file (default with --triton: its only output)")
	f.StringArrayVar(&o.experts, "expert", nil, "a task's expert as `task=model[:version[:output]]`, recorded in the file (repeatable; with --triton, one per task)")
	f.BoolVar(&o.progress, "progress", false, "show a progress bar on stderr even when it is not a terminal")
	f.IntVar(&o.chunk, "chunk", 0, "read this many `ROWS` at a time, or with --triton send this many samples per request (default 4096; with --triton 256, capped by max_batch_size)")
	cmd.MarkFlagRequired("out")
	return cmd
}

// validate checks the flags, before any file is read.
func (o *fitOptions) validate() error {
	switch {
	case o.embeddings == "" && o.triton == "":
		return errors.New("give either --embeddings DIR or --triton HOST:PORT with --inputs DIR")
	case o.embeddings != "" && o.triton != "":
		return errors.New("--embeddings and --triton exclude each other: the features come from files or from Triton")
	case o.triton != "" && o.inputs == "":
		return errors.New("--triton needs --inputs DIR, the directory of <task>.npy calibration inputs")
	case o.triton != "" && o.backbone.Name == "":
		return errors.New("--triton needs --backbone-model, the merged backbone to run")
	case o.triton == "" && o.inputs != "":
		return errors.New("--inputs is only used with --triton")
	}
	if err := checkBeta(o.beta); err != nil {
		return err
	}
	var err error
	if o.normalization, err = react.ParseNormalization(o.normalize); err != nil {
		return fmt.Errorf("--normalize: %w", err)
	}
	if o.chunk < 0 {
		return fmt.Errorf("--chunk must be positive, or 0 for the default, got %d", o.chunk)
	}
	seen := make(map[string]bool)
	for _, t := range o.tasks {
		if err := react.ValidateTaskName(t); err != nil {
			return fmt.Errorf("--tasks: %w", err)
		}
		if seen[t] {
			return fmt.Errorf("--tasks: task %q listed twice", t)
		}
		seen[t] = true
	}
	o.expertRefs = make(map[string]react.ModelRef)
	for _, e := range o.experts {
		task, ref, err := parseExpert(e)
		if err != nil {
			return err
		}
		if _, dup := o.expertRefs[task]; dup {
			return fmt.Errorf("--expert: task %q given twice", task)
		}
		if len(o.tasks) > 0 && !seen[task] {
			return fmt.Errorf("--expert: task %q is not in --tasks", task)
		}
		o.expertRefs[task] = ref
	}
	if dir := filepath.Dir(o.out); dir != "" {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return fmt.Errorf("--out: directory %s does not exist", dir)
		}
	}
	// Refuse an --out the atomic rename could never replace, before any data
	// are read.
	if st, err := os.Stat(o.out); err == nil && st.IsDir() {
		return fmt.Errorf("--out: %s is a directory, want a file name", o.out)
	}
	return nil
}

// checkBeta checks a --beta value (react.ValidateBeta).
func checkBeta(beta float64) error {
	if err := react.ValidateBeta(beta); err != nil {
		return fmt.Errorf("--beta: %w", err)
	}
	return nil
}

// parseExpert parses task=model[:version[:output]].
func parseExpert(s string) (string, react.ModelRef, error) {
	task, model, ok := strings.Cut(s, "=")
	if !ok || model == "" {
		return "", react.ModelRef{}, fmt.Errorf("--expert %q: want task=model[:version[:output]]", s)
	}
	if err := react.ValidateTaskName(task); err != nil {
		return "", react.ModelRef{}, fmt.Errorf("--expert %q: %w", s, err)
	}
	parts := strings.Split(model, ":")
	if len(parts) > 3 || parts[0] == "" {
		return "", react.ModelRef{}, fmt.Errorf("--expert %q: want task=model[:version[:output]]", s)
	}
	ref := react.ModelRef{Name: parts[0]}
	if len(parts) > 1 {
		ref.Version = parts[1]
	}
	if len(parts) > 2 {
		ref.Output = parts[2]
	}
	return task, ref, nil
}

func (o *fitOptions) run(ctx context.Context, stdout, stderr io.Writer, showProgress bool) error {
	if ctx == nil {
		ctx = context.Background()
	}
	openSources := o.openEmbeddings
	if o.triton != "" {
		openSources = func() ([]PairSource, func(), error) { return o.openTriton(ctx) }
	}
	srcs, closeAll, err := openSources()
	if err != nil {
		return err
	}
	defer closeAll()
	var total int64
	for _, p := range srcs {
		total += p.Len()
	}

	var bar *progressbar.ProgressBar
	if showProgress {
		bar = progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(stderr),
			progressbar.OptionSetDescription("fit"),
			progressbar.OptionShowCount(),
			progressbar.OptionSetItsString("pairs"),
			progressbar.OptionShowIts(),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(stderr) }),
		)
	}
	c := &react.Components{
		D:             srcs[0].Dim(),
		Beta:          o.beta,
		Normalization: o.normalization,
		Backbone:      o.backbone,
	}
	backboneFrom := "" // the task whose run recorded c.Backbone, with Triton
	for _, p := range srcs {
		var progress func(int)
		if bar != nil {
			bar.Describe("fit " + p.Task())
			progress = func(n int) { bar.Add(n) }
		}
		acc, err := Accumulate(p, o.chunk, progress)
		if err != nil {
			return err
		}
		expert := o.expertRefs[p.Task()]
		if tp, ok := p.(*TritonPair); ok {
			expert = tp.Expert()
			// Each task checks that one version answered all its chunks;
			// across tasks the backbone must be the same model too.
			b := tp.Backbone()
			if backboneFrom != "" && b != c.Backbone {
				return fmt.Errorf("task %s: backbone model %q answered as version %s, but as version %s for task %s: the model changed during calibration; pin --backbone-version",
					p.Task(), b.Name, b.Version, c.Backbone.Version, backboneFrom)
			}
			c.Backbone, backboneFrom = b, p.Task()
		}
		st, err := acc.Stats(p.Task(), expert)
		if err != nil {
			return fmt.Errorf("task %s: %w", p.Task(), err)
		}
		c.Tasks = append(c.Tasks, st)
	}
	if bar != nil {
		bar.Finish()
	}
	if err := react.SaveComponents(o.out, c); err != nil {
		return err
	}
	for _, t := range c.Tasks {
		fmt.Fprintf(stdout, "task %s: N=%d\n", t.Name, t.N)
	}
	noun := "tasks"
	if len(c.Tasks) == 1 {
		noun = "task"
	}
	fmt.Fprintf(stdout, "wrote %s: %d %s, D=%d, beta=%s, normalization=%s, linear algebra %s\n",
		o.out, len(c.Tasks), noun, c.D, formatFloat(c.Beta), c.Normalization, react.CurrentBackend())
	return nil
}

// closeSources closes every source.
func closeSources(srcs []PairSource) {
	for _, p := range srcs {
		p.Close()
	}
}

// openEmbeddings opens the .npy embeddings of --embeddings. The function it
// returns closes them.
func (o *fitOptions) openEmbeddings() ([]PairSource, func(), error) {
	pairs, err := OpenNPYPairs(o.embeddings, o.tasks)
	if err != nil {
		return nil, nil, fmt.Errorf("reading embeddings: %w", err)
	}
	srcs := make([]PairSource, len(pairs))
	known := make(map[string]bool)
	for i, p := range pairs {
		srcs[i] = p
		known[p.Task()] = true
	}
	for task := range o.expertRefs {
		if !known[task] {
			closeSources(srcs)
			return nil, nil, asUsage(fmt.Errorf("--expert: no embeddings for task %q in %s", task, o.embeddings))
		}
	}
	return srcs, func() { closeSources(srcs) }, nil
}

// openTriton connects to --triton and checks the models and the inputs of
// every task before any sample is sent. The function it returns closes the
// sources, then the connection.
func (o *fitOptions) openTriton(ctx context.Context) ([]PairSource, func(), error) {
	client, err := triton.Dial(ctx, o.triton)
	if err != nil {
		return nil, nil, err
	}
	cfg := TritonConfig{
		Inputs:   o.inputs,
		Tasks:    o.tasks,
		Backbone: o.backbone,
		Experts:  o.expertRefs,
		Batch:    o.chunk, // 0: DefaultTritonBatch
	}
	pairs, err := OpenTritonPairs(ctx, client, cfg)
	if err != nil {
		client.Close()
		return nil, nil, err
	}
	srcs := make([]PairSource, len(pairs))
	for i, p := range pairs {
		srcs[i] = p
	}
	return srcs, func() {
		closeSources(srcs)
		client.Close()
	}, nil
}
