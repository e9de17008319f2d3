package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/sidecar/pipeline"
)

// MaxClassLabels bounds the class label of react_experiment_predictions_total:
// classes from this index on are counted as "other".
const MaxClassLabels = 100

// experimentMetrics are the metrics of experiments, labelled by the
// configured model, experiment, arm and task names and the class index
// (bounded by MaxClassLabels): never by a key or a raw preference.
type experimentMetrics struct {
	requests    *prometheus.CounterVec   // model, experiment, arm, assignment
	errors      *prometheus.CounterVec   // model, experiment, arm, code
	duration    *prometheus.HistogramVec // model, experiment, arm
	overrides   *prometheus.CounterVec   // model, experiment
	excluded    *prometheus.CounterVec   // model, experiment
	confidence  *prometheus.HistogramVec // model, experiment, arm, task
	predictions *prometheus.CounterVec   // model, experiment, arm, task, class
}

// confidenceBuckets split the top-1 confidence, in (0, 1], in twentieths.
var confidenceBuckets = prometheus.LinearBuckets(0.05, 0.05, 20)

func newExperimentMetrics() *experimentMetrics {
	return &experimentMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "react_experiment_requests_total",
			Help: "Requests served with an experiment's arm, by model, experiment, arm and assignment: key (the arm of the request's key) or random (the request had no key).",
		}, []string{"model", "experiment", "arm", "assignment"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "react_experiment_request_errors_total",
			Help: "Requests assigned an experiment's arm that failed, by model, experiment, arm and gRPC status code.",
		}, []string{"model", "experiment", "arm", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "react_experiment_request_duration_seconds",
			Help:    "Whole time in the sidecar of successful requests served with an experiment's arm, by model, experiment and arm.",
			Buckets: latencyBuckets,
		}, []string{"model", "experiment", "arm"}),
		overrides: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "react_experiment_overrides_total",
			Help: "Requests to a model of a running experiment that named their own preference or preset, and so got no arm.",
		}, []string{"model", "experiment"}),
		excluded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "react_experiment_excluded_total",
			Help: "Requests to a model of a running experiment whose key is outside the experiment's traffic share, served with the default.",
		}, []string{"model", "experiment"}),
		confidence: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "react_experiment_top1_confidence",
			Help:    "Top-1 confidence (the largest softmax probability of a head's logits) of each row served with an experiment's arm, by model, experiment, arm and the head's task.",
			Buckets: confidenceBuckets,
		}, []string{"model", "experiment", "arm", "task"}),
		predictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "react_experiment_predictions_total",
			Help: "Rows served with an experiment's arm, by model, experiment, arm, the head's task and the predicted (top-1) class index; classes from 100 on count as \"other\".",
		}, []string{"model", "experiment", "arm", "task", "class"}),
	}
}

func (em *experimentMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{em.requests, em.errors, em.duration, em.overrides, em.excluded, em.confidence, em.predictions}
}

// served records a request for a model of a running experiment; res may be
// nil for a request that failed before its preference was resolved.
func (em *experimentMetrics) served(model string, res *pipeline.Result, total time.Duration, code codes.Code) {
	if res == nil || res.Choice.Experiment == "" {
		return
	}
	c := res.Choice
	switch c.Assignment {
	case control.AssignOverride:
		em.overrides.WithLabelValues(model, c.Experiment).Inc()
		return
	case control.AssignExcluded:
		em.excluded.WithLabelValues(model, c.Experiment).Inc()
		return
	}
	if c.Arm == "" {
		return
	}
	if code != codes.OK {
		em.errors.WithLabelValues(model, c.Experiment, c.Arm, code.String()).Inc()
		return
	}
	em.requests.WithLabelValues(model, c.Experiment, c.Arm, c.Assignment.String()).Inc()
	em.duration.WithLabelValues(model, c.Experiment, c.Arm).Observe(total.Seconds())
	for _, p := range res.Predictions {
		conf := em.confidence.WithLabelValues(model, c.Experiment, c.Arm, p.Task)
		for r, class := range p.Class {
			conf.Observe(p.Confidence[r])
			em.predictions.WithLabelValues(model, c.Experiment, c.Arm, p.Task, classLabel(class)).Inc()
		}
	}
}

// classLabel is the bounded label of a class index.
func classLabel(class int) string {
	if class >= MaxClassLabels {
		return "other"
	}
	return strconv.Itoa(class)
}
