package pipeline

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The names of the shadow comparison's metrics. Their labels take values
// from bounded sets only: the configured model, experiment, arm and task
// names, and the skip reasons; never a key or a preference.
const (
	// MetricShadowRows counts the rows compared: {model, experiment, arm,
	// other, task}, arm the arm that served the request, other the arm it
	// was compared with, task the head's.
	MetricShadowRows = "react_experiment_shadow_rows_total"
	// MetricShadowAgreements counts the rows among them whose top-1 class
	// under other is the one served: same labels. The agreement of a pair
	// is MetricShadowAgreements / MetricShadowRows.
	MetricShadowAgreements = "react_experiment_shadow_agreements_total"
	// MetricShadowSkipped counts the requests drawn for comparison that
	// were not compared, or not in full: {model, experiment, reason};
	// reason is busy, graph_form, no_prediction, no_matrix, timeout,
	// stopped or error.
	MetricShadowSkipped = "react_experiment_shadow_skipped_total"
	// MetricShadowInflight is the number of comparisons in flight:
	// {model, experiment}.
	MetricShadowInflight = "react_experiment_shadow_inflight"
	// MetricShadowDuration is the histogram of the wall time of the
	// comparisons counted in full (every other arm corrected and its heads
	// called): {model, experiment}.
	MetricShadowDuration = "react_experiment_shadow_duration_seconds"
)

// ShadowMetrics counts the shadow comparisons of experiments' arms
// (experiments[].shadow) for every model built with it (Options.Shadow).
// It is a prometheus.Collector, safe for concurrent use; one serves a
// server's every configuration, across reloads.
type ShadowMetrics struct {
	rows, agreements *prometheus.CounterVec
	skips            *prometheus.CounterVec
	running          *prometheus.GaugeVec
	duration         *prometheus.HistogramVec
}

// NewShadowMetrics returns the metrics of shadow comparisons, all at zero
// (no series until a comparison is counted).
func NewShadowMetrics() *ShadowMetrics {
	pair := []string{"model", "experiment", "arm", "other", "task"}
	exp := []string{"model", "experiment"}
	return &ShadowMetrics{
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricShadowRows,
			Help: "Rows served with an experiment's arm (arm) and run again through another arm (other) by the shadow comparison, by model, experiment, arm, other and the head's task.",
		}, pair),
		agreements: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricShadowAgreements,
			Help: "Rows of the shadow comparison whose top-1 class under the other arm is the one served, by model, experiment, arm, other and task.",
		}, pair),
		skips: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricShadowSkipped,
			Help: "Requests drawn for the shadow comparison that were not compared, or not in full, by model, experiment and reason: busy (experiments[].shadow.max_concurrent in flight), graph_form, no_prediction (no logits asked for), no_matrix (an arm without W_p; the others were compared), timeout, stopped (shutdown or reload), error.",
		}, append(exp, "reason")),
		running: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: MetricShadowInflight,
			Help: "Shadow comparisons in flight, by model and experiment.",
		}, exp),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    MetricShadowDuration,
			Help:    "Wall time of the shadow comparisons counted in full (every other arm's correction and head calls), by model and experiment.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14), // 0.5ms to 4s
		}, exp),
	}
}

func (sm *ShadowMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{sm.rows, sm.agreements, sm.skips, sm.running, sm.duration}
}

// Describe sends the descriptions of the metrics.
func (sm *ShadowMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range sm.collectors() {
		c.Describe(ch)
	}
}

// Collect sends the metrics.
func (sm *ShadowMetrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range sm.collectors() {
		c.Collect(ch)
	}
}

// Register registers the metrics with reg.
func (sm *ShadowMetrics) Register(reg prometheus.Registerer) error {
	if err := reg.Register(sm); err != nil {
		return fmt.Errorf("pipeline: registering the shadow comparison's metrics: %w", err)
	}
	return nil
}

// skipped counts a request drawn that was not compared in full.
func (sm *ShadowMetrics) skipped(model, experiment, reason string) {
	sm.skips.WithLabelValues(model, experiment, reason).Inc()
}

// inflight adds delta to the comparisons in flight.
func (sm *ShadowMetrics) inflight(model, experiment string, delta float64) {
	sm.running.WithLabelValues(model, experiment).Add(delta)
}

// compared counts a comparison of a request served with arm, in full.
func (sm *ShadowMetrics) compared(model, experiment, arm string, counts []pairCount, took time.Duration) {
	for _, c := range counts {
		sm.rows.WithLabelValues(model, experiment, arm, c.other, c.task).Add(float64(c.rows))
		sm.agreements.WithLabelValues(model, experiment, arm, c.other, c.task).Add(float64(c.agreed))
	}
	sm.duration.WithLabelValues(model, experiment).Observe(took.Seconds())
}
