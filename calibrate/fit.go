package calibrate

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/mergectl/react-triton/react"
)

// fitOptions are the flags of calibrate fit.
type fitOptions struct {
	embeddings    string
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
		Use:   "fit --embeddings DIR --out FILE [flags]",
		Short: "Fit per-task statistics from paired .npy embeddings into a components file",
		Long: `fit reads, for each task, the merged backbone's features and the task
expert's features of the same unlabeled calibration inputs, and writes the
statistics ReACT needs to a components file.

DIR must hold two files per task:
  DIR/<task>.merged.npy   the merged backbone's features
  DIR/<task>.expert.npy   the task expert's features
Each is an N×D array of float32 or float64 in C order, one sample per row;
row i of both files comes from the same input. Tasks are every name found
in DIR, in sorted order, or those listed with --tasks, in that order.

All files are checked before any data is read (pairs present, dtypes,
shapes, sizes, the same D everywhere). Rows are then streamed in chunks, so
memory stays O(D²) whatever N is.

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
      --out components.safetensors`,
		Args: cobra.NoArgs,
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return asUsage(err)
			}
			showProgress := o.progress || isTerminal(stderr)
			return o.run(stdout, stderr, showProgress)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&o.embeddings, "embeddings", "", "`DIR` holding <task>.merged.npy and <task>.expert.npy (required)")
	f.StringVar(&o.out, "out", "", "components `FILE` to write (required)")
	f.Float64Var(&o.beta, "beta", 0.1, "default regulariser β ≥ 0 that pulls each correction towards its orthogonal factor")
	f.StringVar(&o.normalize, "normalize", string(react.NormSum), "default normalisation of the statistics: `sum|mean`")
	f.StringSliceVar(&o.tasks, "tasks", nil, "comma-separated `TASKS` to fit, in this order (default: every task in --embeddings, sorted)")
	f.StringVar(&o.backbone.Name, "backbone-model", "", "`NAME` of the merged backbone model, recorded in the file")
	f.StringVar(&o.backbone.Version, "backbone-version", "", "`VERSION` of the merged backbone model, recorded in the file")
	f.StringVar(&o.backbone.Output, "backbone-output", "", "`TENSOR`: output of the merged backbone holding the features, recorded in the file")
	f.StringArrayVar(&o.experts, "expert", nil, "`task=model[:version[:output]]` naming a task's expert, recorded in the file (repeatable)")
	f.BoolVar(&o.progress, "progress", false, "show a progress bar on stderr even when it is not a terminal")
	f.IntVar(&o.chunk, "chunk", DefaultChunkRows, "`ROWS` read at a time")
	cmd.MarkFlagRequired("embeddings")
	cmd.MarkFlagRequired("out")
	return cmd
}

// validate checks the flags, before any file is read.
func (o *fitOptions) validate() error {
	if err := checkBeta(o.beta); err != nil {
		return err
	}
	var err error
	if o.normalization, err = react.ParseNormalization(o.normalize); err != nil {
		return fmt.Errorf("--normalize: %w", err)
	}
	if o.chunk <= 0 {
		return fmt.Errorf("--chunk must be positive, got %d", o.chunk)
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
	return nil
}

// checkBeta checks a --beta value.
func checkBeta(beta float64) error {
	if !(beta >= 0) || math.IsInf(beta, 0) {
		return fmt.Errorf("--beta must be a finite number ≥ 0, got %v", beta)
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

func (o *fitOptions) run(stdout, stderr io.Writer, showProgress bool) error {
	pairs, err := OpenNPYPairs(o.embeddings, o.tasks)
	if err != nil {
		return fmt.Errorf("reading embeddings: %w", err)
	}
	defer func() {
		for _, p := range pairs {
			p.Close()
		}
	}()
	known := make(map[string]bool)
	var total int64
	for _, p := range pairs {
		known[p.Task()] = true
		total += p.Len()
	}
	for task := range o.expertRefs {
		if !known[task] {
			return asUsage(fmt.Errorf("--expert: no embeddings for task %q in %s", task, o.embeddings))
		}
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
		D:             pairs[0].Dim(),
		Beta:          o.beta,
		Normalization: o.normalization,
		Backbone:      o.backbone,
	}
	for _, p := range pairs {
		var progress func(int)
		if bar != nil {
			bar.Describe("fit " + p.Task())
			progress = func(n int) { bar.Add(n) }
		}
		acc, err := Accumulate(p, o.chunk, progress)
		if err != nil {
			return err
		}
		st, err := acc.Stats(p.Task(), o.expertRefs[p.Task()])
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
	fmt.Fprintf(stdout, "wrote %s: %d tasks, D=%d, beta=%s, normalization=%s\n",
		o.out, len(c.Tasks), c.D, formatFloat(c.Beta), c.Normalization)
	return nil
}
