package decide

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/mergectl/react-triton/experiment/sequential"
	"github.com/mergectl/react-triton/problem"
)

// Arm is one of the experiment's arms with its configured weight.
type Arm struct {
	Name   string
	Weight float64
}

// Config is what to decide.
type Config struct {
	Selector
	// Kind is the outcomes compared: "label" or "reward"; "" for the one
	// kind the outcomes have.
	Kind string
	// Arms are the experiment's arms in configuration order, with their
	// weights.
	Arms []Arm
	// Control is the arm the others are set beside; "" for the first.
	Control string
	// Options are the sequential test's α, τ and minimum outcomes. Each
	// of the k arms set beside the control (those of positive weight) is
	// compared at α/k (Bonferroni), so that the chance of any wrong
	// decision stays at most α.
	Options sequential.Options
	// Sources name where the outcomes were read, for the report.
	Sources []string
}

// Validate reports every problem of c that needs no outcomes, all at
// once.
func (c Config) Validate() error {
	p, _ := c.ValidateSettings().(problem.List)
	if len(c.Arms) < 2 {
		p.Add("arms", "want at least two arms, got %d", len(c.Arms))
	}
	names := make([]string, len(c.Arms))
	seen := map[string]bool{}
	for i, a := range c.Arms {
		names[i] = a.Name
		switch {
		case a.Name == "":
			p.Add(problem.Index("arms", i), "an arm needs a name")
		case seen[a.Name]:
			p.Add(problem.Index("arms", i), "arm %q given twice", a.Name)
		case !(a.Weight >= 0) || math.IsInf(a.Weight, 0):
			p.Add(problem.Index("arms", i), "arm %q: weight %v: want a number ≥ 0", a.Name, a.Weight)
		}
		seen[a.Name] = true
	}
	if c.Control != "" && !seen[c.Control] {
		p.Add("control", "%q is not an arm (arms: %s)", c.Control, strings.Join(names, ", "))
	}
	return p.Err()
}

// ValidateSettings reports the problems of c's experiment, kind, task and
// options, all at once: what Validate checks but the arms.
func (c Config) ValidateSettings() error {
	var p problem.List
	if c.Experiment == "" {
		p.Add("experiment", "missing")
	}
	switch c.Kind {
	case "", "label", "reward":
	default:
		p.Add("outcome", "%q: want label or reward", c.Kind)
	}
	if c.Kind == "reward" && c.Task != "" {
		p.Add("task", "a reward has no task: a task goes with labels")
	}
	if err := c.Options.Validate(); err != nil {
		p.Add("", "%v", err)
	}
	return p.Err()
}

// Report is an experiment decided, as calibrate experiment report prints
// it (text, or this as JSON).
type Report struct {
	Experiment string   `json:"experiment"`
	Model      string   `json:"model,omitempty"`
	Task       string   `json:"task,omitempty"`
	Kind       string   `json:"kind"`
	Sources    []string `json:"sources"`
	Control    string   `json:"control"`
	// Alpha is the error rate of the whole report; AlphaEach that of each
	// of the Comparisons with the control (the arms of positive weight
	// but the control), Alpha / Comparisons.
	Alpha       float64     `json:"alpha"`
	AlphaEach   float64     `json:"alpha_per_comparison"`
	Comparisons int         `json:"comparisons"`
	Tau         float64     `json:"tau"`
	MinOutcomes float64     `json:"min_outcomes"`
	Arms        []ArmReport `json:"arms"`
	SampleRatio RatioReport `json:"sample_ratio"`
	// Decision sums up the arms' decisions.
	Decision string `json:"decision"`
	// Notes are what the reader should know: arms without outcomes, arms
	// in the metrics that the configuration does not have.
	Notes []string `json:"notes,omitempty"`
}

// ArmReport is one arm's outcomes and decision.
type ArmReport struct {
	Name   string  `json:"name"`
	Weight float64 `json:"weight"`
	// N, Sum and SumSquares are the outcomes' count, sum and sum of
	// squares; Expected the count the weights expect.
	N          float64 `json:"n"`
	Sum        float64 `json:"sum"`
	SumSquares float64 `json:"sum_squares"`
	Expected   float64 `json:"expected_n"`
	// Mean is the mean outcome; Lower and Upper its always-valid interval
	// at Alpha.
	Mean  Float `json:"mean"`
	Lower Float `json:"lower"`
	Upper Float `json:"upper"`
	// VsControl is the arm set beside the control; nil for the control
	// and for an arm of weight 0.
	VsControl *Comparison `json:"vs_control,omitempty"`
	Decision  string      `json:"decision"`
}

// Comparison is an arm set beside the control at AlphaEach.
type Comparison struct {
	// Diff is the arm's mean less the control's; Lower and Upper its
	// always-valid interval.
	Diff  Float `json:"diff"`
	Lower Float `json:"lower"`
	Upper Float `json:"upper"`
	// PValue is the always-valid p-value of no difference.
	PValue float64 `json:"p_value"`
	// Outcome is sequential's decision: better, worse, no decision yet.
	Outcome string `json:"outcome"`
}

// RatioReport is the sample-ratio check of the arms' outcome counts
// against their weights.
type RatioReport struct {
	ChiSquare float64 `json:"chi_square"`
	DF        int     `json:"df"`
	PValue    float64 `json:"p_value"`
	Threshold float64 `json:"threshold"`
	Mismatch  bool    `json:"mismatch"`
}

// MismatchDecision is the decision of every arm, and of the experiment,
// when the sample ratio does not match the weights.
const MismatchDecision = "sample ratio mismatch: do not trust"

// Decide decides the experiment c describes from its outcomes o. The
// problems (no outcomes of the experiment, both kinds without a choice,
// counters no outcomes in [0, 1] give) are a problem.List.
func Decide(c Config, o Outcomes) (*Report, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	opt := c.Options
	if opt.Alpha == 0 {
		opt.Alpha = sequential.DefaultAlpha
	}
	if opt.Tau == 0 {
		opt.Tau = sequential.DefaultTau
	}
	if opt.MinOutcomes == 0 {
		opt.MinOutcomes = sequential.DefaultMinOutcomes
	}
	control := c.Control
	if control == "" {
		control = c.Arms[0].Name
	}
	configured := map[string]bool{}
	for _, a := range c.Arms {
		configured[a.Name] = true
	}

	var p problem.List
	kind, err := chooseKind(c, o)
	if err != nil {
		return nil, err
	}
	r := &Report{
		Experiment: c.Experiment, Model: c.Model, Task: c.Task, Kind: kind, Sources: c.Sources,
		Control: control, Alpha: opt.Alpha, Tau: opt.Tau, MinOutcomes: opt.MinOutcomes,
	}
	for _, a := range c.Arms {
		if compared(a, control) {
			r.Comparisons++
		}
	}
	r.AlphaEach = opt.Alpha / float64(max(r.Comparisons, 1))
	samples := make([]sequential.Sample, len(c.Arms))
	counts, weights := make([]float64, len(c.Arms)), make([]float64, len(c.Arms))
	for i, a := range c.Arms {
		s := o.Samples[ArmKind{a.Name, kind}]
		if err := s.Check(); err != nil {
			p.Add(problem.Key("arms", a.Name), "%s outcomes: %v: the counters do not come from one window's outcomes", kind, err)
		}
		samples[i], counts[i], weights[i] = s, s.N, a.Weight
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	ratio, err := sequential.SampleRatio(counts, weights, 0)
	if err != nil {
		return nil, err
	}
	r.SampleRatio = RatioReport{ChiSquare: ratio.ChiSquare, DF: ratio.DF, PValue: ratio.PValue, Threshold: sequential.DefaultMismatchP, Mismatch: ratio.Mismatch}

	meanOpt := opt
	eachOpt := opt
	eachOpt.Alpha = r.AlphaEach
	ci := slices.IndexFunc(c.Arms, func(a Arm) bool { return a.Name == control })
	var decided []string
	for i, a := range c.Arms {
		s := samples[i]
		ar := ArmReport{Name: a.Name, Weight: a.Weight, N: s.N, Sum: s.Sum, SumSquares: s.SumSq,
			Expected: ratio.Expected[i], Mean: Float(s.Mean())}
		lo, hi := sequential.MeanInterval(s, meanOpt)
		ar.Lower, ar.Upper = Float(lo), Float(hi)
		if s.N == 0 {
			ar.Lower, ar.Upper = Float(math.NaN()), Float(math.NaN())
			r.Notes = append(r.Notes, fmt.Sprintf("arm %s has no %s outcomes yet", a.Name, kind))
		}
		if compared(a, control) {
			cmp := sequential.Compare(samples[ci], s, eachOpt)
			ar.VsControl = &Comparison{Diff: Float(cmp.Diff), Lower: Float(cmp.Lower), Upper: Float(cmp.Upper), PValue: cmp.PValue, Outcome: cmp.Decision.String()}
		}
		ar.Decision = armDecision(a, control, s, samples[ci], ar.VsControl, ratio.Mismatch, opt.MinOutcomes)
		if ar.VsControl != nil && ar.VsControl.Outcome != sequential.Undecided.String() && !ratio.Mismatch {
			decided = append(decided, ar.Decision)
		}
		r.Arms = append(r.Arms, ar)
	}
	for _, ak := range slices.SortedFunc(maps.Keys(o.Samples), func(a, b ArmKind) int { return strings.Compare(a.Arm+"\x00"+a.Kind, b.Arm+"\x00"+b.Kind) }) {
		if !configured[ak.Arm] && ak.Kind == kind {
			r.Notes = append(r.Notes, fmt.Sprintf("arm %s has %v %s outcomes but is not an arm of the configuration: left out", ak.Arm, o.Samples[ak].N, kind))
		}
	}
	switch {
	case ratio.Mismatch:
		r.Decision = MismatchDecision
	case len(decided) > 0:
		r.Decision = strings.Join(decided, "; ")
	default:
		r.Decision = "no decision yet"
	}
	return r, nil
}

// chooseKind returns the kind to compare: c's, or the one kind the
// configured arms have outcomes of.
func chooseKind(c Config, o Outcomes) (string, error) {
	var total = map[string]float64{}
	for ak, s := range o.Samples {
		if slices.ContainsFunc(c.Arms, func(a Arm) bool { return a.Name == ak.Arm }) {
			total[ak.Kind] += s.N
		}
	}
	where := "experiment " + c.Experiment
	if c.Model != "" {
		where += ", model " + c.Model
	}
	if c.Task != "" {
		where += ", task " + c.Task
	}
	var p problem.List
	switch {
	case c.Kind != "" && total[c.Kind] > 0:
		return c.Kind, nil
	case c.Kind == "" && total["label"] > 0 && total["reward"] > 0:
		p.Add("outcome", "%s has both labels (%v) and rewards (%v): choose one with --outcome", where, total["label"], total["reward"])
	case c.Kind == "" && total["label"] > 0:
		return "label", nil
	case c.Kind == "" && total["reward"] > 0:
		return "reward", nil
	case !o.Experiments[c.Experiment]:
		have := "none"
		if names := o.experimentNames(); len(names) > 0 {
			have = strings.Join(names, ", ")
		}
		p.Add("experiment", "no outcomes of experiment %s in the sources (experiments with outcomes there: %s)", c.Experiment, have)
	default:
		what := "outcomes"
		if c.Kind != "" {
			what = c.Kind + " outcomes"
		}
		var arms []string
		for ak := range o.Samples {
			if !slices.Contains(arms, ak.Arm) {
				arms = append(arms, ak.Arm)
			}
		}
		slices.Sort(arms)
		have := "none"
		if len(arms) > 0 {
			have = strings.Join(arms, ", ")
		}
		p.Add("arms", "no %s of any arm of %s in the sources (its arms there: %s)", what, where, have)
	}
	return "", p
}

// compared reports whether arm a is set beside the control: every arm
// but the control and the arms of weight 0, which take no traffic (a
// placeholder; outcomes counted in one are a sample-ratio mismatch).
func compared(a Arm, control string) bool { return a.Name != control && a.Weight > 0 }

// armDecision words an arm's decision.
func armDecision(a Arm, control string, s, cs sequential.Sample, cmp *Comparison, mismatch bool, minOutcomes float64) string {
	arm := a.Name
	switch {
	case arm == control:
		return "control"
	case cmp == nil:
		return "not compared: weight 0"
	case s.N == 0:
		return "no outcomes yet"
	case mismatch:
		return MismatchDecision
	case cmp.Outcome == sequential.Better.String():
		return arm + " better than " + control
	case cmp.Outcome == sequential.Worse.String():
		return arm + " worse than " + control
	case s.N < minOutcomes || cs.N < minOutcomes:
		return fmt.Sprintf("no decision yet: fewer than %v outcomes", minOutcomes)
	}
	return "no decision yet"
}

// Float is a number that writes NaN and ±Inf (a mean of no outcomes, an
// interval before any) as JSON null.
type Float float64

// MarshalJSON writes f, or null.
func (f Float) MarshalJSON() ([]byte, error) {
	x := float64(f)
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return []byte("null"), nil
	}
	return []byte(fmt.Sprint(x)), nil
}
