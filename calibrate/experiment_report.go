package calibrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mergectl/react-triton/calibrate/decide"
	"github.com/mergectl/react-triton/config"
	"github.com/mergectl/react-triton/experiment"
	"github.com/mergectl/react-triton/experiment/sequential"
	"github.com/mergectl/react-triton/problem"
)

// reportOptions are the flags of experiment report.
type reportOptions struct {
	experiment, model, task, outcome string
	arms, sidecarConfig, control     string
	metrics                          []string
	prometheus                       string
	alpha, tau                       float64
	timeout                          time.Duration
	format                           string
}

// reportFlags are report's keys; --sidecar-config is a path.
var reportFlags = config.CommandFlags{Paths: []string{flagSidecarConfig}}

func newExperimentReportCommand(stdout io.Writer) *cobra.Command {
	var o reportOptions
	cmd := &cobra.Command{
		Use:   "report --experiment EXP (--sidecar-config FILE | --arms A=W,...) (--metrics URL|FILE ... | --prometheus URL)",
		Short: "Decide an experiment from the outcomes the sidecars counted",
		Long: `report reads the outcome counters of one experiment, which the sidecars
keep per model, experiment and arm from the feedback their clients send
(react_experiment_outcomes_total, _outcome_score_total and
_outcome_score_squares_total), sums them over the sources, and prints for
each arm: its outcomes, their mean with its always-valid interval, the
difference to the control arm with its always-valid interval and p-value,
and a decision; then the sample-ratio check of the arms' outcome counts
against their weights, and the decision of the experiment.

The statistics are the normal-mixture sequential test (mSPRT): they stay
valid however often the report is read, so it may be run every minute and
the experiment stopped the moment it decides. With k arms beside the
control, each comparison is made at α/k, so that the chance of any wrong
decision stays at most α. A sample-ratio mismatch (p below 0.001) says the
assignment or the feedback's path is broken: no arm is then declared
better or worse.

The counters come from the sidecars' own metrics pages (--metrics, once
per replica: an address such as http://sidecar-0:8003/metrics, or a file
holding a page), or from a Prometheus server that scrapes them
(--prometheus, its address; the query is sum by (arm, kind) of each
counter). The arms and weights come from the experiment of a sidecar
configuration (--sidecar-config), or from --arms. Outcomes are labels (1
when the served prediction matched the true class, else 0) or rewards in
[0, 1]; --outcome chooses when an experiment has both, --task keeps one
task's labels.

Exit status: 0 with a report, whatever it decides; 1 when the sources or
the configuration cannot be read (every problem at once); 2 for a usage
error.`,
		Example: `  calibrate experiment report --experiment fashion-ab --sidecar-config sidecar.yaml \
    --metrics http://sidecar-0:8003/metrics --metrics http://sidecar-1:8003/metrics
  calibrate experiment report --experiment fashion-ab --arms merged=50,react=50 \
    --prometheus http://prometheus:9090 --format json`,
		Args: cobra.NoArgs,
	}
	f := cmd.Flags()
	f.StringVar(&o.experiment, "experiment", "", "the experiment's `NAME` (its metrics' experiment label, and its name in --sidecar-config)")
	f.StringVar(&o.model, "model", "", "only the outcomes of model `NAME` (default: every model of the experiment)")
	f.StringVar(&o.sidecarConfig, flagSidecarConfig, "", "a sidecar configuration `FILE` to read the experiment's arms and weights from")
	f.StringVar(&o.arms, "arms", "", "the `ARMS` in order with their weights, such as merged=50,react=50 (instead of --sidecar-config)")
	f.StringVar(&o.control, "control", "", "the control `ARM` the others are set beside (default: the first arm)")
	f.StringArrayVar(&o.metrics, "metrics", nil, "a sidecar's metrics page: its `URL` (http://host:8003/metrics) or a FILE holding one; repeat it for every replica")
	f.StringVar(&o.prometheus, "prometheus", "", "the `URL` of a Prometheus server that scrapes the sidecars (instead of --metrics)")
	f.Float64Var(&o.alpha, "alpha", sequential.DefaultAlpha, "the error rate α: the chance of ever declaring a wrong winner, however often the report is read")
	f.Float64Var(&o.tau, "tau", sequential.DefaultTau, "the scale τ of difference the test is tuned for, in outcome units")
	f.StringVar(&o.outcome, "outcome", "", "the `KIND` of outcomes to compare: label or reward (default: the one kind the experiment has)")
	f.StringVar(&o.task, "task", "", "only the labels of `TASK` (its accuracy)")
	f.DurationVar(&o.timeout, "timeout", 10*time.Second, "how long each source may take to answer")
	f.StringVar(&o.format, "format", "text", "the `FORMAT` of the report: text or json")
	run := layered(cmd, reportFlags, stdout, []string{"experiment"}, func(cmd *cobra.Command, _ []string) error {
		return o.run(cmd.Context(), stdout)
	})
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := run(cmd, args); err != nil {
			return withSidecarHint(err, cmd.Flags())
		}
		return nil
	}
	return cmd
}

// check reports the flags' usage problems, all at once.
func (o *reportOptions) check() error {
	var p problem.List
	switch {
	case o.sidecarConfig == "" && o.arms == "":
		p.Add("", "give the arms: --sidecar-config FILE or --arms A=W,...")
	case o.sidecarConfig != "" && o.arms != "":
		p.Add("", "give --sidecar-config or --arms, not both")
	}
	switch {
	case len(o.metrics) == 0 && o.prometheus == "":
		p.Add("", "give the outcomes' source: --metrics URL|FILE (per replica) or --prometheus URL")
	case len(o.metrics) > 0 && o.prometheus != "":
		p.Add("", "give --metrics or --prometheus, not both")
	}
	if o.prometheus != "" && !decide.IsURL(o.prometheus) {
		p.Add("--prometheus", "%q: want an http:// or https:// address", o.prometheus)
	}
	if o.timeout <= 0 {
		p.Add("--timeout", "want a positive duration, got %v", o.timeout)
	}
	if o.format != "text" && o.format != "json" {
		p.Add("--format", "%q: want text or json", o.format)
	}
	if o.arms != "" {
		if _, err := experiment.ParseArms(o.arms); err != nil {
			p.Add("--arms", "%v", err)
		}
	}
	// The report's own rules, with the flags' names.
	c := decide.Config{Selector: decide.Selector{Experiment: o.experiment, Task: o.task}, Kind: o.outcome,
		Options: sequential.Options{Alpha: o.alpha, Tau: o.tau}}
	if err := c.ValidateSettings(); err != nil {
		for _, q := range problems(err) {
			if q.Path != "" {
				q.Path = "--" + q.Path
			}
			p = append(p, q)
		}
	}
	if o.alpha == 0 {
		p.Add("--alpha", "want a number in (0, 1), got 0")
	}
	if o.tau == 0 {
		p.Add("--tau", "want a positive number, got 0")
	}
	if err := p.Err(); err != nil {
		return usagef("%v", err)
	}
	return nil
}

// arms returns the experiment's arms, from --arms or --sidecar-config,
// with the problems of a configuration that does not have the experiment
// or the model.
func (o *reportOptions) armsOf() ([]decide.Arm, error) {
	if o.arms != "" {
		a, err := experiment.ParseArms(o.arms)
		if err != nil {
			return nil, err
		}
		arms := make([]decide.Arm, len(a))
		for i, x := range a {
			arms[i] = decide.Arm{Name: x.Name, Weight: float64(x.Weight)}
		}
		return arms, nil
	}
	e, err := configExperiment(o.sidecarConfig, o.experiment)
	if err != nil {
		return nil, problem.List{{Msg: err.Error()}} // err names the file
	}
	var models []string
	found := o.model == ""
	for _, m := range e.Models {
		models = append(models, m)
		found = found || m == o.model
	}
	if !found {
		return nil, problem.List{problem.New(o.sidecarConfig, "experiment %s has no model %q (its models: %s)", o.experiment, o.model, strings.Join(models, ", "))}
	}
	arms := make([]decide.Arm, len(e.Arms))
	for i, a := range e.Arms {
		arms[i] = decide.Arm{Name: a.Name, Weight: float64(*a.Weight)}
	}
	return arms, nil
}

func (o *reportOptions) run(ctx context.Context, stdout io.Writer) error {
	if err := o.check(); err != nil {
		return err
	}
	sel := decide.Selector{Experiment: o.experiment, Model: o.model, Task: o.task}
	var p problem.List
	arms, err := o.armsOf()
	if err != nil {
		p = append(p, problems(err)...)
	}
	outcomes, err := decide.Read(ctx, &http.Client{Timeout: o.timeout}, o.metrics, o.prometheus, sel)
	if err != nil {
		p = append(p, problems(err)...)
	}
	sources := o.metrics
	if o.prometheus != "" {
		sources = []string{o.prometheus}
	}
	if err := p.Err(); err != nil {
		return fmt.Errorf("experiment report: %w", err)
	}
	r, err := decide.Decide(decide.Config{Selector: sel, Kind: o.outcome, Arms: arms, Control: o.control,
		Options: sequential.Options{Alpha: o.alpha, Tau: o.tau}, Sources: sources}, outcomes)
	if err != nil {
		return fmt.Errorf("experiment report: %w", err)
	}
	if o.format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	return r.WriteText(stdout)
}

// problems returns the problems of err: a problem.List, or one problem.
func problems(err error) problem.List {
	if l, ok := errors.AsType[problem.List](err); ok {
		return l
	}
	return problem.List{{Msg: err.Error()}}
}
