package calibrate

import (
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"
	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/internal/npyfile"
	"github.com/mergectl/react-triton/react"
)

// Methods of calibrate solve.
const (
	MethodReact  = "react"  // W_p = (Σ p_t A_t)(Σ p_t C_t)⁻¹
	MethodNaive  = "naive"  // Σ p_t Ŵ_t
	MethodPolar  = "polar"  // averaged polar factors of the Ŵ_t
	MethodSingle = "single" // Ŵ_t of the one task the preference names
)

type solveOptions struct {
	components string
	preference string
	beta       float64
	normalize  string
	method     string
	out        string
}

func newSolveCommand(stdout io.Writer) *cobra.Command {
	o := &solveOptions{}
	cmd := &cobra.Command{
		Use:   "solve --components FILE --preference SPEC --out W.npy [flags]",
		Short: "Compute the correction W_p for a preference and write it as a .npy array",
		Long: `solve computes the correction matrix W_p for a preference p over the
tasks of a components file, and writes it as a D×D float32 .npy array
oriented so that the corrected feature is ẑ = W @ z.

The preference is task=weight[,task=weight...]: each weight a finite number
≥ 0, the sum > 0. Omitted tasks weigh 0 and the weights are normalised to
sum to 1, so cars=3,dtd=1 is the same as cars=0.75,dtd=0.25. The
preference is checked against the file's task list before anything is
computed.

--beta and --normalize override the defaults stored in the file; the
statistics need no refitting. --method chooses the aggregation:
  react   W_p = (Σ p_t A_t)(Σ p_t C_t)⁻¹, the ReACT solution (default)
  naive   Σ p_t Ŵ_t, the weighted sum of the single-task corrections
  polar   the single-task corrections' rotations and stretches averaged
          separately, then recombined
  single  Ŵ_t of the one task the preference names (e.g. cars=1)
where A_t = S_t + β W_orth_t, C_t = G_t + β I and Ŵ_t = A_t C_t⁻¹.

The output is written to a temporary file and renamed into place.`,
		Example: `  calibrate solve --components components.safetensors --preference cars=0.6,dtd=0.4 --out W.npy

  # One task only, with a different β than the one fitted.
  calibrate solve --components components.safetensors --preference dtd=1 --beta 1 --out W_dtd.npy

  # The naive baseline, for comparison.
  calibrate solve --components components.safetensors --preference cars=1,dtd=1 --method naive --out W_naive.npy`,
		Args: cobra.NoArgs,
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd, stdout)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&o.components, "components", "", "components `FILE` written by calibrate fit (required)")
	f.StringVar(&o.preference, "preference", "", "preference `SPEC` over the tasks, e.g. cars=0.6,dtd=0.4 (required)")
	f.Float64Var(&o.beta, "beta", 0, "regulariser β ≥ 0 (default: the file's)")
	f.StringVar(&o.normalize, "normalize", "", "normalisation `sum|mean` (default: the file's)")
	f.StringVar(&o.method, "method", MethodReact, "aggregation `METHOD`: react, naive, polar or single")
	f.StringVar(&o.out, "out", "", "`W.npy` file to write W_p to (required)")
	cmd.MarkFlagRequired("components")
	cmd.MarkFlagRequired("preference")
	cmd.MarkFlagRequired("out")
	return cmd
}

func (o *solveOptions) run(cmd *cobra.Command, stdout io.Writer) error {
	// Check the flags, then the preference against the file's header, before
	// loading the statistics.
	switch o.method {
	case MethodReact, MethodNaive, MethodPolar, MethodSingle:
	default:
		return usagef("--method %q: want react, naive, polar or single", o.method)
	}
	betaSet := cmd.Flags().Changed("beta")
	if betaSet {
		if err := checkBeta(o.beta); err != nil {
			return asUsage(err)
		}
	}
	var norm react.Normalization
	if cmd.Flags().Changed("normalize") {
		var err error
		if norm, err = react.ParseNormalization(o.normalize); err != nil {
			return usagef("--normalize: %w", err)
		}
	}
	info, err := react.ReadFileInfo(o.components)
	if err != nil {
		return err
	}
	p, err := react.ParsePreference(o.preference, info.TaskNames())
	if err != nil {
		return usagef("--preference: %w", err)
	}
	var single string
	if o.method == MethodSingle {
		for _, t := range p.Tasks() {
			if p.Weight(t) > 0 {
				if single != "" {
					return usagef("--method single needs a preference with exactly one task, e.g. %s=1; got %s", single, p)
				}
				single = t
			}
		}
	}

	c, err := react.LoadComponents(o.components)
	if err != nil {
		return err
	}
	opt := react.DefaultOptions(c)
	if betaSet {
		opt.Beta = o.beta
	}
	if norm != "" {
		opt.Normalization = norm
	}
	s, err := react.NewSolver(c, opt)
	if err != nil {
		return err
	}
	var w *mat.Dense
	switch o.method {
	case MethodReact:
		w, err = s.Solve(p)
	case MethodNaive:
		w, err = s.Naive(p)
	case MethodPolar:
		w, err = s.Polar(p)
	case MethodSingle:
		w, err = s.Single(single)
	}
	if err != nil {
		return fmt.Errorf("solving %s for %s: %w", o.method, p, err)
	}
	d := s.D()
	if err := npyfile.WriteFileFloat32(o.out, d, d, react.Float32Matrix(w)); err != nil {
		return fmt.Errorf("writing %s: %w", o.out, err)
	}
	fmt.Fprintf(stdout, "wrote %s: %d×%d float32 W_p (ẑ = W @ z) for preference %s, method %s, beta=%s, normalization=%s\n",
		o.out, d, d, p, o.method, formatFloat(opt.Beta), opt.Normalization)
	return nil
}

// formatFloat formats v in its shortest exact decimal form.
func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
