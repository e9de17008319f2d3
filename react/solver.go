package react

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/react/internal/condbound"
	"github.com/mergectl/react-triton/react/internal/linalg"
)

// Options are the load-time choices that turn stored statistics into the
// matrices A_t and C_t.
type Options struct {
	// Beta is the regulariser β ≥ 0 that pulls W towards W_orth_t.
	Beta float64
	// Normalization says whether S_t and G_t are used as sums (NormSum) or
	// divided by N_t (NormMean) before β is added.
	Normalization Normalization
}

// DefaultOptions returns the options the components were calibrated with.
func DefaultOptions(c *Components) Options {
	return Options{Beta: c.Beta, Normalization: c.Normalization}
}

// Validate checks that β is finite and ≥ 0 and that the normalisation is
// known.
func (o Options) Validate() error {
	if err := ValidateBeta(o.Beta); err != nil {
		return err
	}
	if _, err := ParseNormalization(string(o.Normalization)); err != nil {
		return err
	}
	return nil
}

// MaxCondition is the largest estimated condition number of C_p for which
// the solver returns an answer. Tools may compare Condition with it to warn
// about a task before anyone solves (the 2-norm and 1-norm condition numbers
// agree within a factor of D).
//
// A Cholesky solve is backward stable, so the computed W_p has a relative
// error of about c(D)·ε·κ(C_p), with c(D) a modest function of D that grows
// roughly like D. Above κ = 1/(64ε) ≈ 7.0e13 that bound exceeds 1/64 even
// with c(D) = 1: fewer than two significant digits are guaranteed, and with
// the realistic c(D) none at all, while the statistics themselves come from
// float32 features. Such an answer is garbage and is refused with a
// *SolveError instead. The estimate is LAPACK's 1-norm estimate (Dpocon),
// which never exceeds the true 1-norm condition number and is usually within
// a factor of a few of it.
const MaxCondition = 1 / (64 * epsilon)

// WarnCondition is the estimated condition number of C_p above which a W_p,
// though computed accurately, should not be trusted: tools warn about it
// (calibrate inspect for each C_t, calibrate solve for the C_p it used).
//
// Below MaxCondition the arithmetic is sound; the trouble is the data. G_t
// is a sample estimate, so it carries sampling noise of relative size about
// 1/√N_t, and features computed in float32 add about 1e-7 more. Solving with
// C_p amplifies a relative perturbation of C_p by up to κ(C_p) in W_p, so
// above κ = 1e8 even the float32 rounding of the features alone may change
// W_p by more than 10 and the sampling noise by far more: W_p then reflects
// which samples were drawn rather than the tasks, although it is the exact
// solution of the stored statistics. The cure is a larger β, which bounds
// κ(C_p) by (λ_max + β)/β.
const WarnCondition = 1e8

// SolveStats reports on one solve. Computing it costs nothing beyond the
// solve.
type SolveStats struct {
	// Cond is LAPACK's estimate (Dpocon) of the 1-norm condition number of
	// the C_p that was factorised. It never exceeds the true 1-norm
	// condition number and is usually within a factor of a few of it.
	// With Bounded it is instead an upper bound.
	Cond float64
	// Bounded reports that Cond is an upper bound of the condition number
	// computed before the solve, not an estimate (see
	// react/internal/condbound): a solver after ProveConditionBound, and
	// the GPU solver, report the bound, and skip the estimate, when the
	// bound is at most WarnCondition. Other solvers always estimate.
	Bounded bool
}

// IllConditioned reports whether Cond exceeds WarnCondition, so that W_p is
// likely dominated by noise in the calibration statistics.
func (st SolveStats) IllConditioned() bool { return st.Cond > WarnCondition }

// Solver computes W_p for any preference over a fixed set of tasks. It is
// read-only after NewSolver and safe for concurrent use.
type Solver struct {
	d     int
	opt   Options
	tasks []string
	n     []int64
	index map[string]int
	stats []linalg.Task // by task, in order
	// bounds bound the condition number of any C_p before its solve, or
	// are nil: a one-shot solver, or a G_t not shown positive semi-definite.
	bounds *condbound.Bounds

	pool sync.Pool // *workspace
}

// workspace is the scratch memory of one SolveInto call.
type workspace struct {
	w     []float64 // weights aligned with the solver's tasks
	cp    []float64 // C_p, then its Cholesky factor
	work  []float64
	iwork []int
}

// NewSolver validates c and opt and returns a solver of
//
//	A_t = S'_t + β W_orth_t,  C_t = G'_t + β I,
//
// where S' = S and G' = G for NormSum, and S' = S/N_t and G' = G/N_t for
// NormMean. It precomputes each A_t (T·D² float64 values) and reads G_t
// from c in place, so c must not be modified while the solver is in use
// (the components of a file never are). A server that solves many
// preferences wants it; a process that solves once wants NewOneShotSolver.
func NewSolver(c *Components, opt Options) (*Solver, error) {
	return newSolver(c, opt, true)
}

// NewOneShotSolver is NewSolver without the precomputation: each solve
// reads S_t, W_orth_t and G_t from c, which costs no setup time and no
// memory but makes each solve's weighted sums read more (about 1.7× the
// data). calibrate solve uses it.
func NewOneShotSolver(c *Components, opt Options) (*Solver, error) {
	return newSolver(c, opt, false)
}

func newSolver(c *Components, opt Options, precompute bool) (*Solver, error) {
	if c == nil {
		return nil, errors.New("solver: nil components")
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("solver: %w", err)
	}
	if err := opt.Validate(); err != nil {
		return nil, fmt.Errorf("solver: %w", err)
	}
	d := c.D
	s := &Solver{
		d:     d,
		opt:   opt,
		tasks: c.TaskNames(),
		n:     make([]int64, len(c.Tasks)),
		index: make(map[string]int, len(c.Tasks)),
		stats: make([]linalg.Task, len(c.Tasks)),
	}
	for k, t := range c.Tasks {
		s.index[t.Name] = k
		s.n[k] = t.N
		scale := 1.0
		if opt.Normalization == NormMean {
			scale = 1 / float64(t.N)
		}
		tm := linalg.Task{S: t.S.RawMatrix(), W: t.WOrth.RawMatrix(), G: t.G.RawSymmetric(), Scale: scale}
		if precompute {
			tm.A = make([]float64, d*d)
			for i := range d {
				tm.ARow(tm.A[i*d:i*d+d], i, opt.Beta)
			}
		}
		s.stats[k] = tm
	}
	s.pool.New = func() any {
		return &workspace{
			w:     make([]float64, len(s.tasks)),
			cp:    make([]float64, d*d),
			work:  make([]float64, 3*d),
			iwork: make([]int, d),
		}
	}
	return s, nil
}

// ProveConditionBound readies s to bound the condition number of each C_p
// before its solve instead of estimating it after the factorisation
// (Dpocon; react/internal/condbound): it shows every G_t positive
// semi-definite within the bound's rounding slack, one Cholesky
// factorisation of order D per task, and reports whether it could. From then on a solve whose bound is
// at most WarnCondition reports it (SolveStats.Bounded) and skips the
// estimate; the others estimate as before. A server that solves many
// preferences calls it once, after NewSolver and before any solve; it is
// not safe for concurrent use with solves. A one-shot solver cannot.
func (s *Solver) ProveConditionBound() bool {
	if s.stats[0].A == nil {
		return false
	}
	s.bounds = proveGramBounds(s)
	return s.bounds != nil
}

// D returns the feature dimension.
func (s *Solver) D() int { return s.d }

// Options returns the options the solver was built with.
func (s *Solver) Options() Options { return s.opt }

// Tasks returns the task names in order.
func (s *Solver) Tasks() []string { return append([]string(nil), s.tasks...) }

// TaskSystem stores task k's statistics (k indexes Tasks) as the solver
// reads them: A_t in a and G_t in g, D×D row-major each (of g, the upper
// triangle is G_t's; below it lies what the components hold there, never
// read), and returns the factor s_t of its normalisation (1, or 1/N_t for
// NormMean): A_t = s_t S_t + β W_orth_t and C_t = s_t G_t + β I. It is
// what a DeviceSolver uploads, once (react/cudadevice).
func (s *Solver) TaskSystem(k int, a, g []float64) (scale float64) {
	d, t := s.d, &s.stats[k]
	for i := range d {
		if t.A != nil {
			copy(a[i*d:i*d+d], t.A[i*d:i*d+d])
		} else {
			t.ARow(a[i*d:i*d+d], i, s.opt.Beta)
		}
		copy(g[i*d:i*d+d], t.G.Data[i*t.G.Stride:i*t.G.Stride+d])
	}
	return t.Scale
}

// Solve returns W_p = (Σ p_t A_t)(Σ p_t C_t)⁻¹ as a new D×D matrix. See
// SolveInto.
func (s *Solver) Solve(p Preference) (*mat.Dense, error) {
	dst := mat.NewDense(s.d, s.d, nil)
	if err := s.SolveInto(dst, p); err != nil {
		return nil, err
	}
	return dst, nil
}

// SolveInto stores W_p = (Σ p_t A_t)(Σ p_t C_t)⁻¹ in dst, which must be
// empty or D×D. p may be over any task list; each task with a positive
// weight must be one of the solver's, and tasks p does not name weigh 0.
//
// It factorises the symmetric C_p = Σ p_t C_t = UᵀU by Cholesky and solves
// W_p UᵀU = A_p by two triangular solves, in parallel over blocks of rows
// when GOMAXPROCS > 1; no inverse is formed. If C_p is not
// positive definite, or its estimated condition number exceeds 1/(64ε) ≈
// 7e13, it returns a *SolveError and dst holds no meaningful value.
//
// SolveInto's own scratch (C_p and the LAPACK work arrays) is pooled, so it
// allocates no D×D matrices in steady state; at large D gonum's blocked
// Cholesky still allocates some internal scratch (about 0.4 MB in 37
// allocations per call at D = 512 with gonum v0.17).
func (s *Solver) SolveInto(dst *mat.Dense, p Preference) error {
	_, err := s.SolveIntoStats(dst, p)
	return err
}

// SolveIntoStats is SolveInto that also reports on the solve, at no extra
// cost: the estimated condition number of C_p is a by-product of the check
// against MaxCondition. Compare it with WarnCondition (st.IllConditioned)
// to warn that W_p is dominated by noise.
func (s *Solver) SolveIntoStats(dst *mat.Dense, p Preference) (SolveStats, error) {
	ws := s.pool.Get().(*workspace)
	defer s.pool.Put(ws)
	if err := s.Weights(ws.w, p); err != nil {
		return SolveStats{}, err
	}
	return s.solveWeights(dst, ws, p, "")
}

// Single returns the single-task correction Ŵ_t = A_t C_t⁻¹ of task, which
// equals Solve of the one-hot preference on task.
func (s *Solver) Single(task string) (*mat.Dense, error) {
	w, _, err := s.SingleStats(task)
	return w, err
}

// SingleStats is Single that also reports on the solve, like
// SolveIntoStats.
func (s *Solver) SingleStats(task string) (*mat.Dense, SolveStats, error) {
	k, ok := s.index[task]
	if !ok {
		return nil, SolveStats{}, fmt.Errorf("single: %w", s.unknownTask(task))
	}
	ws := s.pool.Get().(*workspace)
	defer s.pool.Put(ws)
	clear(ws.w)
	ws.w[k] = 1
	dst := mat.NewDense(s.d, s.d, nil)
	st, err := s.solveWeights(dst, ws, Preference{}, task)
	if err != nil {
		return nil, st, err
	}
	return dst, st, nil
}

// Condition returns the 2-norm condition number λ_max/λ_min of C_t for
// task, from its symmetric eigenvalues, or +Inf if C_t is singular or not
// positive definite.
func (s *Solver) Condition(task string) (float64, error) {
	k, ok := s.index[task]
	if !ok {
		return 0, fmt.Errorf("condition: %w", s.unknownTask(task))
	}
	ws := &workspace{w: make([]float64, len(s.tasks)), cp: make([]float64, s.d*s.d)}
	ws.w[k] = 1
	linalg.WeightedSums(blas64.General{Rows: s.d, Cols: s.d, Stride: s.d, Data: make([]float64, s.d*s.d)}, ws.cp, s.stats, ws.w, s.opt.Beta, make([]float64, s.d))
	c := mat.NewSymDense(s.d, ws.cp)
	var eig mat.EigenSym
	if !eig.Factorize(c, false) {
		return 0, fmt.Errorf("condition of task %q: eigenvalue decomposition did not converge", task)
	}
	vals := eig.Values(nil) // ascending
	lo, hi := vals[0], vals[len(vals)-1]
	if !(lo > 0) {
		return math.Inf(1), nil
	}
	return hi / lo, nil
}

func (s *Solver) unknownTask(task string) error {
	return fmt.Errorf("unknown task %q (known: %s)", task, strings.Join(s.tasks, ", "))
}

// Weights stores in w, aligned with Tasks, the weight p gives each of the
// solver's tasks (0 where p names none): the weights of p's solve. An
// empty p, or one that weighs a task the solver lacks, is an error.
func (s *Solver) Weights(w []float64, p Preference) error {
	if p.IsZero() {
		return errors.New("solve: empty preference")
	}
	clear(w)
	for i, t := range p.tasks {
		if p.weights[i] == 0 {
			continue
		}
		k, ok := s.index[t]
		if !ok {
			return fmt.Errorf("solve: preference %q: %w", p.String(), s.unknownTask(t))
		}
		w[k] = p.weights[i]
	}
	return nil
}

// solveWeights computes W_p for the weights in ws.w into dst. p, or the
// single task when p is empty, names the preference in errors. The stats
// hold the estimated condition number even when the solve is refused.
func (s *Solver) solveWeights(dst *mat.Dense, ws *workspace, p Preference, single string) (SolveStats, error) {
	d := s.d
	if dst.IsEmpty() {
		dst.ReuseAs(d, d)
	}
	if r, c := dst.Dims(); r != d || c != d {
		return SolveStats{}, fmt.Errorf("solve: destination is %d×%d, want %d×%d", r, c, d, d)
	}
	out := dst.RawMatrix()
	u, st, err := s.factorWeights(out, ws.cp, ws, p, single)
	if err != nil {
		return st, err
	}
	linalg.SolveRows(u, out, gemmSolve, solveWorkers())
	return st, nil
}

// factorWeights stores A_p = Σ w_k A_k in ap and the Cholesky factor U of
// C_p = Σ w_k C_k = UᵀU in the upper triangle of cp (D×D, stride D), for
// the weights in ws.w, and checks C_p's condition. p, or the single task
// when p is empty, names the preference in errors.
func (s *Solver) factorWeights(ap blas64.General, cp []float64, ws *workspace, p Preference, single string) (blas64.Triangular, SolveStats, error) {
	name := func() string {
		if single != "" {
			return single + "=1"
		}
		return p.String()
	}
	d := s.d
	anorm := linalg.WeightedSums(ap, cp, s.stats, ws.w, s.opt.Beta, ws.work[:d])
	sym := blas64.Symmetric{N: d, Stride: d, Uplo: blas.Upper, Data: cp}
	u, ok := lapack64.Potrf(sym)
	if !ok {
		return u, SolveStats{Cond: math.Inf(1)}, s.Refusal(ws.w, name(), math.Inf(1))
	}
	if s.bounds != nil {
		if b := s.bounds.Cond(ws.w); b <= WarnCondition {
			return u, SolveStats{Cond: b, Bounded: true}, nil
		}
	}
	rcond := lapack64.Pocon(sym, anorm, ws.work, ws.iwork)
	st := SolveStats{Cond: 1 / rcond}
	if !(rcond*MaxCondition >= 1) { // also catches NaN
		return u, st, s.Refusal(ws.w, name(), st.Cond)
	}
	return u, st, nil
}

// SolveError reports that W_p cannot be computed reliably because
// C_p = Σ p_t C_t is not positive definite or is too ill-conditioned. Its
// message says what to do about it.
type SolveError struct {
	Preference    string        // canonical form of the preference
	Beta          float64       // β in use
	Normalization Normalization // normalisation in use
	D             int           // feature dimension
	Cond          float64       // estimated 1-norm condition number of C_p; +Inf if the Cholesky factorisation failed
	// Short lists the weighted tasks with fewer samples than D, and their N.
	Short []TaskCount
}

// TaskCount is a task name with its number of calibration samples.
type TaskCount struct {
	Task string
	N    int64
}

// Refusal returns the *SolveError of a solve refused for its C_p: the
// weights w (see Weights), the preference named pref and the condition
// number cond of C_p (+Inf when its Cholesky factorisation failed). The
// solver refuses with it, and a DeviceSolver does the same.
func (s *Solver) Refusal(w []float64, pref string, cond float64) *SolveError {
	e := &SolveError{Preference: pref, Beta: s.opt.Beta, Normalization: s.opt.Normalization, D: s.d, Cond: cond}
	for k, wk := range w {
		if wk > 0 && s.n[k] < int64(s.d) {
			e.Short = append(e.Short, TaskCount{Task: s.tasks[k], N: s.n[k]})
		}
	}
	return e
}

// Error implements error.
func (e *SolveError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "solve: preference %q: C_p = Σ p_t C_t ", e.Preference)
	if math.IsInf(e.Cond, 1) || math.IsNaN(e.Cond) {
		b.WriteString("is not positive definite (Cholesky factorisation failed)")
	} else {
		fmt.Fprintf(&b, "is too ill-conditioned (estimated condition number %.3g > %.3g)", e.Cond, MaxCondition)
	}
	if e.Beta == 0 {
		b.WriteString("; β=0 needs N ≥ D linearly independent samples per task")
		if len(e.Short) > 0 {
			parts := make([]string, len(e.Short))
			for i, t := range e.Short {
				parts[i] = fmt.Sprintf("task %s has N=%d, D=%d", t.Task, t.N, e.D)
			}
			fmt.Fprintf(&b, " (%s)", strings.Join(parts, "; "))
		} else {
			b.WriteString(" (the weighted tasks' samples are too nearly linearly dependent)")
		}
		b.WriteString("; use β > 0")
		return b.String()
	}
	fmt.Fprintf(&b, "; β=%g is too small to regularise it", e.Beta)
	if len(e.Short) > 0 {
		fmt.Fprintf(&b, " (task %s has N=%d < D=%d)", e.Short[0].Task, e.Short[0].N, e.D)
	}
	if e.Normalization == NormMean {
		b.WriteString("; increase β (with the mean normalisation β is relative to per-sample second moments)")
	} else {
		b.WriteString("; increase β")
	}
	return b.String()
}
