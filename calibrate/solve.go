package calibrate

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/spf13/cobra"
	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/config"
	"github.com/mergectl/react-triton/internal/npyfile"
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/baseline"
	"github.com/mergectl/react-triton/react/componentsfile"
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

func newSolveCommand(stdout, stderr io.Writer) *cobra.Command {
	o := &solveOptions{}
	cmd := &cobra.Command{
		Use:   "solve --components FILE --preference SPEC --out W.npy [flags]",
		Short: "Compute the correction W_p for a preference and write it as a .npy array",
		Long: `solve computes the correction matrix W_p for a preference p over the
tasks of a components file, and writes it as a D×D float32 .npy array
oriented so that the corrected feature is ẑ = W @ z.

The preference is task=weight[,task=weight...]: each weight a plain
decimal number ≥ 0 (digits with an optional fraction and exponent, such
as 2, 0.25 or 1e-3), the sum > 0. Omitted tasks weigh 0 and the weights
are normalised to sum to 1, so cars=3,dtd=1 is the same as
cars=0.75,dtd=0.25. The preference is checked against the file's task
list before anything is computed.

--beta and --normalize override the defaults stored in the file; the
statistics need no refitting. --method chooses the aggregation:
  react   W_p = (Σ p_t A_t)(Σ p_t C_t)⁻¹, the ReACT solution (default)
  naive   Σ p_t Ŵ_t, the weighted sum of the single-task corrections
  polar   the single-task corrections' rotations and stretches averaged
          separately, then recombined
  single  Ŵ_t of the one task the preference names (e.g. cars=1)
where A_t = S_t + β W_orth_t, C_t = G_t + β I and Ŵ_t = A_t C_t⁻¹.

The output is written to a temporary file and renamed into place; it may
not be the components file itself. A W_p too large for float32 is an
error. If the estimated condition number of C_p exceeds ` + formatFloat(react.WarnCondition) + `, solve
writes W_p but warns on stderr that β is too small for the data.`,
		Example: `  calibrate solve --components components.safetensors --preference cars=0.6,dtd=0.4 --out W.npy

  # One task only, with a different β than the one fitted.
  calibrate solve --components components.safetensors --preference dtd=1 --beta 1 --out W_dtd.npy

  # The naive baseline, for comparison.
  calibrate solve --components components.safetensors --preference cars=1,dtd=1 --method naive --out W_naive.npy`,
		Args: cobra.NoArgs,
	}
	f := cmd.Flags()
	f.StringVar(&o.components, "components", "", "components `FILE` written by calibrate fit (required)")
	f.StringVar(&o.preference, "preference", "", "preference `SPEC` over the tasks, e.g. cars=0.6,dtd=0.4 (required)")
	f.Float64Var(&o.beta, "beta", 0, "regulariser β = `B` ≥ 0 (default: the file's)")
	f.StringVar(&o.normalize, "normalize", "", "normalisation `sum|mean` (default: the file's)")
	f.StringVar(&o.method, "method", MethodReact, "aggregation `METHOD`: react, naive, polar or single")
	f.StringVar(&o.out, "out", "", "write W_p to `W.npy`, which may not be the components file (required)")
	cmd.RunE = layered(cmd, solveFlags, stdout,
		[]string{"components", "preference", "out"}, func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd, stdout, stderr)
		})
	return cmd
}

// solveFlags are solve's keys: --beta and --normalize, left out, keep the
// file's, which --print-config writes as null.
var solveFlags = config.CommandFlags{Paths: []string{"components", "out"}, Unset: []string{"beta", "normalize"}}

func (o *solveOptions) run(cmd *cobra.Command, stdout, stderr io.Writer) error {
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
	if err := checkDistinct(o.components, o.out); err != nil {
		return err
	}
	info, err := componentsfile.ReadInfo(o.components)
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

	c, err := componentsfile.Load(o.components)
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
	s, err := react.NewOneShotSolver(c, opt) // one solve: no precomputation
	if err != nil {
		return err
	}
	var (
		w    *mat.Dense
		cond float64 // estimated condition number of the worst C_p used
		st   react.SolveStats
	)
	switch o.method {
	case MethodReact:
		w = mat.NewDense(s.D(), s.D(), nil)
		st, err = s.SolveIntoStats(w, p)
		cond = st.Cond
	case MethodNaive, MethodPolar:
		if o.method == MethodNaive {
			w, err = baseline.Naive(s, p)
		} else {
			w, err = baseline.Polar(s, p)
		}
		if err == nil {
			cond, err = worstCondition(s, p)
		}
	case MethodSingle:
		w, st, err = s.SingleStats(single)
		cond = st.Cond
	}
	if err != nil {
		return fmt.Errorf("solving %s for %s: %w", o.method, p, err)
	}
	w32, err := react.Float32Matrix(w)
	if err != nil {
		if errors.Is(err, react.ErrFloat32Range) {
			return fmt.Errorf("W_p for %s (method %s, beta=%s) does not fit in float32, nothing written: %w",
				p, o.method, formatFloat(opt.Beta), err)
		}
		return err
	}
	if cond > react.WarnCondition {
		fmt.Fprintf(stderr, "calibrate: warning: the estimated condition number of C_p for %s is %.3g > %s: %s\n",
			p, cond, formatFloat(react.WarnCondition), conditionAdvice(opt.Normalization))
	}
	d := s.D()
	if err := npyfile.WriteFileFloat32(o.out, d, d, w32); err != nil {
		return fmt.Errorf("writing %s: %w", o.out, err)
	}
	fmt.Fprintf(stdout, "wrote %s: %d×%d float32 W_p (ẑ = W @ z) for preference %s, method %s, beta=%s, normalization=%s, linear algebra %s\n",
		o.out, d, d, p, o.method, formatFloat(opt.Beta), opt.Normalization, react.CPUBackend())
	return nil
}

// checkDistinct refuses, as a usage error, an output path that names the
// input file, whatever the path's spelling: through a symbolic link, a
// relative path or a hard link. Writing W_p there would destroy the
// components. An output that does not exist yet is fine.
func checkDistinct(in, out string) error {
	ii, err := os.Stat(in)
	if err != nil {
		return nil // reading the input reports it
	}
	oi, err := os.Stat(out)
	if err != nil {
		return nil
	}
	if os.SameFile(ii, oi) {
		return usagef("--out %s is the components file %s: writing W_p there would destroy it; choose another --out", out, in)
	}
	return nil
}

// worstCondition returns the largest condition number of C_t among the tasks
// p weighs, the matrices the naive and polar aggregations solve with.
func worstCondition(s *react.Solver, p react.Preference) (float64, error) {
	worst := 0.0
	for _, t := range p.Tasks() {
		if p.Weight(t) == 0 {
			continue
		}
		k, err := s.Condition(t)
		if err != nil {
			return 0, err
		}
		worst = max(worst, k)
	}
	return worst, nil
}

// formatFloat formats v in its shortest exact decimal form.
func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
