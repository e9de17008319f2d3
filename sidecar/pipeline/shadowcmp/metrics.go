package shadowcmp

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The names of the shadow comparison's metrics. Their labels take values
// from bounded sets only: the configured model, experiment, arm and task
// names, and the skip reasons; never a key or a preference.
const (
	// MetricRows counts the rows compared: {model, experiment, arm,
	// other, task}, arm the arm that served the request, other the arm it
	// was compared with, task the head's.
	MetricRows = "react_experiment_shadow_rows_total"
	// MetricAgreements counts the rows among them whose top-1 class
	// under other is the one served: same labels. The agreement of a pair
	// is MetricAgreements / MetricRows.
	MetricAgreements = "react_experiment_shadow_agreements_total"
	// MetricSkipped counts the requests drawn for comparison that
	// were not compared, or not in full: {model, experiment, reason};
	// reason is one of the Reason constants.
	MetricSkipped = "react_experiment_shadow_skipped_total"
	// MetricInflight is the number of comparisons in flight:
	// {model, experiment}.
	MetricInflight = "react_experiment_shadow_inflight"
	// MetricDuration is the histogram of the wall time of the
	// comparisons counted in full (every other arm corrected and its heads
	// called): {model, experiment}.
	MetricDuration = "react_experiment_shadow_duration_seconds"
)

// Metrics counts the shadow comparisons of experiments' arms. It is a
// prometheus.Collector, safe for concurrent use; one serves a server's
// every configuration, across reloads.
type Metrics struct {
	rows, agreements *prometheus.CounterVec
	skips            *prometheus.CounterVec
	running          *prometheus.GaugeVec
	duration         *prometheus.HistogramVec
}

// NewMetrics returns the metrics of shadow comparisons, all at zero (no
// series until a comparison is counted).
func NewMetrics() *Metrics {
	pair := []string{"model", "experiment", "arm", "other", "task"}
	exp := []string{"model", "experiment"}
	return &Metrics{
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricRows,
			Help: "Rows served with an experiment's arm (arm) and run again through another arm (other) by the shadow comparison, by model, experiment, arm, other and the head's task.",
		}, pair),
		agreements: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricAgreements,
			Help: "Rows of the shadow comparison whose top-1 class under the other arm is the one served, by model, experiment, arm, other and task.",
		}, pair),
		skips: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricSkipped,
			Help: "Requests drawn for the shadow comparison that were not compared, or not in full, by model, experiment and reason: busy (experiments[].shadow.max_concurrent in flight), graph_form, no_prediction (no logits asked for), no_matrix (an arm without W_p; the others were compared), timeout, stopped (shutdown or reload), error.",
		}, append(exp, "reason")),
		running: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: MetricInflight,
			Help: "Shadow comparisons in flight, by model and experiment.",
		}, exp),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    MetricDuration,
			Help:    "Wall time of the shadow comparisons counted in full (every other arm's correction and head calls), by model and experiment.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14), // 0.5ms to 4s
		}, exp),
	}
}

func (sm *Metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{sm.rows, sm.agreements, sm.skips, sm.running, sm.duration}
}

// Describe sends the descriptions of the metrics.
func (sm *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range sm.collectors() {
		c.Describe(ch)
	}
}

// Collect sends the metrics.
func (sm *Metrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range sm.collectors() {
		c.Collect(ch)
	}
}

// Register registers the metrics with reg.
func (sm *Metrics) Register(reg prometheus.Registerer) error {
	if err := reg.Register(sm); err != nil {
		return fmt.Errorf("shadowcmp: registering the metrics: %w", err)
	}
	return nil
}

// skipped counts a request drawn that was not compared in full.
func (sm *Metrics) skipped(model, experiment, reason string) {
	sm.skips.WithLabelValues(model, experiment, reason).Inc()
}

// inflight adds delta to the comparisons in flight.
func (sm *Metrics) inflight(model, experiment string, delta float64) {
	sm.running.WithLabelValues(model, experiment).Add(delta)
}

// compared counts a comparison of a request served with arm, in full.
func (sm *Metrics) compared(model, experiment, arm string, counts []Count, took time.Duration) {
	for _, c := range counts {
		sm.rows.WithLabelValues(model, experiment, arm, c.Other, c.Task).Add(float64(c.Rows))
		sm.agreements.WithLabelValues(model, experiment, arm, c.Other, c.Task).Add(float64(c.Agreed))
	}
	sm.duration.WithLabelValues(model, experiment).Observe(took.Seconds())
}
