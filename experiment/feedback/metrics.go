package feedback

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// The metrics' names. Their labels take values from bounded sets only:
// the configured model, experiment, arm and task names (or output names),
// the kinds and the reasons; never an id or a preference.
const (
	// MetricRecorded counts the requests recorded in the window (served
	// with an arm, with an id): {model, experiment, arm}.
	MetricRecorded = "react_experiment_feedback_recorded_total"
	// MetricOutcomes counts the outcomes joined: {model, experiment, arm,
	// kind, task}; kind is label or reward, task the label's task (the
	// output's name where the model has none), "" for a reward.
	MetricOutcomes = "react_experiment_outcomes_total"
	// MetricScore is the sum of their scores: the labels the prediction
	// matched (accuracy is MetricScore / MetricOutcomes), or the rewards.
	MetricScore = "react_experiment_outcome_score_total"
	// MetricScoreSquares is the sum of the scores' squares (equal to
	// MetricScore for labels), for the variance of a reward.
	MetricScoreSquares = "react_experiment_outcome_score_squares_total"
	// MetricRejected counts the feedback not joined: {model, reason};
	// reason is unknown, expired, duplicate or invalid, model is "" for a
	// model the window never recorded a request of.
	MetricRejected = "react_experiment_feedback_rejected_total"
	// MetricDropped counts the requests that left the window unanswered:
	// {model, experiment, arm, reason}; reason is expired (older than the
	// window's age), evicted (pushed out by newer requests) or replaced
	// (recorded again under the same id).
	MetricDropped = "react_experiment_feedback_dropped_total"
	// MetricEntries is the number of requests the window holds.
	MetricEntries = "react_experiment_feedback_window_entries"
	// MetricCapacity is the most requests the window holds (MaxEntries).
	MetricCapacity = "react_experiment_feedback_window_capacity"
)

// dropReason is why a request left the window unanswered.
type dropReason int

const (
	dropExpired dropReason = iota
	dropEvicted
	dropReplaced
	numDrop
)

var dropNames = [numDrop]string{"expired", "evicted", "replaced"}

var (
	armLabels     = []string{"model", "experiment", "arm"}
	outcomeLabels = []string{"model", "experiment", "arm", "kind", "task"}

	descRecorded = prometheus.NewDesc(MetricRecorded,
		"Requests served with an experiment's arm and recorded in the feedback window (they had an id, and can take feedback), by model, experiment and arm.",
		armLabels, nil)
	descOutcomes = prometheus.NewDesc(MetricOutcomes,
		"Outcomes joined to the requests they are about, by model, experiment, arm, kind (label: a true class; reward: a number in [0, 1]) and task (a label's task, \"\" for a reward).",
		outcomeLabels, nil)
	descScore = prometheus.NewDesc(MetricScore,
		"Sum of the outcomes' scores (1 or 0 for a label the served prediction matched or missed, the reward for a reward), by model, experiment, arm, kind and task.",
		outcomeLabels, nil)
	descScoreSquares = prometheus.NewDesc(MetricScoreSquares,
		"Sum of the squares of the outcomes' scores, by model, experiment, arm, kind and task.",
		outcomeLabels, nil)
	descRejected = prometheus.NewDesc(MetricRejected,
		"Feedback not joined, by model (\"\" for a model never recorded) and reason: unknown id, expired (came after its request left the window), duplicate, invalid.",
		[]string{"model", "reason"}, nil)
	descDropped = prometheus.NewDesc(MetricDropped,
		"Requests that left the feedback window without feedback, by model, experiment, arm and reason: expired (older than the window's age), evicted (pushed out by newer requests), replaced (recorded again under the same id).",
		[]string{"model", "experiment", "arm", "reason"}, nil)
	descEntries = prometheus.NewDesc(MetricEntries,
		"Requests the feedback window holds, waiting for their feedback.", nil, nil)
	descCapacity = prometheus.NewDesc(MetricCapacity,
		"The most requests the feedback window holds.", nil, nil)
)

// armKey names an arm of an experiment on a model.
type armKey struct{ model, experiment, arm string }

// armCounts are an arm's window counters.
type armCounts struct {
	model, experiment, name string
	recorded                float64
	dropped                 [numDrop]float64
}

// seriesKey names one series of the outcome counters.
type seriesKey struct{ model, experiment, arm, kind, task string }

// sums are one series' outcomes: count, sum and sum of squares.
type sums struct{ n, sum, sumSq float64 }

type rejectKey struct {
	model  string
	reason Reason
}

// counts are the window's metrics, kept under its mutex so that a scrape
// reads the three outcome counters of a series at one moment (a count
// never lags its sum).
type counts struct {
	arms     map[armKey]*armCounts
	outcomes map[seriesKey]*sums
	rejected map[rejectKey]float64
	models   map[string]bool // the models of arms
}

func newCounts() counts {
	return counts{arms: map[armKey]*armCounts{}, outcomes: map[seriesKey]*sums{}, rejected: map[rejectKey]float64{}, models: map[string]bool{}}
}

// arm returns the counters of an arm, made on first use.
func (c *counts) arm(model, experiment, arm string) *armCounts {
	k := armKey{model, experiment, arm}
	a := c.arms[k]
	if a == nil {
		a = &armCounts{model: model, experiment: experiment, name: arm}
		c.arms[k] = a
		c.models[model] = true
	}
	return a
}

// modelLabel returns model if a request of it was ever recorded, else "":
// feedback names any model it likes, the labels only configured ones.
func (c *counts) modelLabel(model string) string {
	if c.models[model] {
		return model
	}
	return ""
}

// count adds a joined outcome to its series.
func (c *counts) count(a *armCounts, j Joined) {
	k := seriesKey{a.model, a.experiment, a.name, j.Kind.String(), j.Task}
	s := c.outcomes[k]
	if s == nil {
		s = &sums{}
		c.outcomes[k] = s
	}
	s.n++
	s.sum += j.Score
	s.sumSq += j.Score * j.Score
}

// Describe sends the descriptions of the window's metrics.
func (w *Window) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRecorded, descOutcomes, descScore, descScoreSquares, descRejected, descDropped, descEntries, descCapacity} {
		ch <- d
	}
}

// Collect sends the window's metrics, read at one moment, after dropping
// the requests older than MaxAge.
func (w *Window) Collect(ch chan<- prometheus.Metric) {
	now := w.since()
	w.mu.Lock()
	w.sweep(now, -1)
	out := make([]prometheus.Metric, 0, 2+len(w.arms)*(1+int(numDrop))+3*len(w.outcomes)+len(w.rejected))
	out = append(out,
		prometheus.MustNewConstMetric(descEntries, prometheus.GaugeValue, float64(w.held)),
		prometheus.MustNewConstMetric(descCapacity, prometheus.GaugeValue, float64(w.opt.MaxEntries)))
	for _, a := range w.arms {
		out = append(out, prometheus.MustNewConstMetric(descRecorded, prometheus.CounterValue, a.recorded, a.model, a.experiment, a.name))
		for r, n := range a.dropped {
			out = append(out, prometheus.MustNewConstMetric(descDropped, prometheus.CounterValue, n, a.model, a.experiment, a.name, dropNames[r]))
		}
	}
	for k, s := range w.outcomes {
		labels := []string{k.model, k.experiment, k.arm, k.kind, k.task}
		out = append(out,
			prometheus.MustNewConstMetric(descOutcomes, prometheus.CounterValue, s.n, labels...),
			prometheus.MustNewConstMetric(descScore, prometheus.CounterValue, s.sum, labels...),
			prometheus.MustNewConstMetric(descScoreSquares, prometheus.CounterValue, s.sumSq, labels...))
	}
	for k, n := range w.rejected {
		out = append(out, prometheus.MustNewConstMetric(descRejected, prometheus.CounterValue, n, k.model, k.reason.String()))
	}
	w.mu.Unlock()
	for _, m := range out {
		ch <- m
	}
}

// Register registers the window's metrics with reg.
func (w *Window) Register(reg prometheus.Registerer) error {
	if err := reg.Register(w); err != nil {
		return fmt.Errorf("feedback: registering the window's metrics: %w", err)
	}
	return nil
}
