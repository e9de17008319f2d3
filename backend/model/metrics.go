package model

import "github.com/mergectl/react-triton/control"

// The counters of a model's experiment, with the sidecar's names, labels
// and meaning (docs/sidecar.md, "Metrics per arm"); the backend registers
// them with Triton's custom metrics, so they appear on Triton's metrics
// endpoint. The model label is the react model's name.
const (
	MetricRequests  = "react_experiment_requests_total"
	MetricErrors    = "react_experiment_request_errors_total"
	MetricOverrides = "react_experiment_overrides_total"
	MetricExcluded  = "react_experiment_excluded_total"
)

// MetricFamily is one counter family: its name, help and label names.
type MetricFamily struct {
	Name, Help string
	Labels     []string
}

// MetricFamilies are the families of ExperimentCount's counters.
var MetricFamilies = []MetricFamily{
	{MetricRequests, "Requests served with an experiment's arm by the react backend, by react model, experiment, arm and assignment: key (the arm of the request's key) or random (the request had no key).",
		[]string{"model", "experiment", "arm", "assignment"}},
	{MetricErrors, "Requests assigned an experiment's arm by the react backend that failed, by react model, experiment, arm and status code (gRPC's name).",
		[]string{"model", "experiment", "arm", "code"}},
	{MetricOverrides, "Requests to a react model of a running experiment that named their own preference or preset, and so got no arm.",
		[]string{"model", "experiment"}},
	{MetricExcluded, "Requests to a react model of a running experiment whose key is outside the experiment's traffic share, served with the default.",
		[]string{"model", "experiment"}},
}

// Count is one increment of an experiment counter. It is comparable, so
// that a server can keep its counters by it.
type Count struct {
	// Metric is the family's name.
	Metric string
	// Model, Experiment and Arm are label values; Arm is "" for the
	// overrides and the excluded.
	Model, Experiment, Arm string
	// Label is the last label's value of the requests (the assignment)
	// and of the errors (the code); "" for the others.
	Label string
}

// Labels returns the count's label values in its family's order.
func (c Count) Labels() []string {
	switch c.Metric {
	case MetricRequests, MetricErrors:
		return []string{c.Model, c.Experiment, c.Arm, c.Label}
	}
	return []string{c.Model, c.Experiment}
}

// ExperimentCount returns the counter one request's outcome adds one to, as
// the sidecar counts it: a request that named its own preference or preset
// while the experiment ran is an override, one whose key is outside the
// traffic share is excluded, and one served with an arm counts by its arm
// and assignment (key or random), or, when it failed, by its arm and code.
// ok is false when no experiment ran for the request (none is configured,
// it is outside its window, or the request failed before its preference
// was resolved).
func (m *Model) ExperimentCount(o Outcome) (c Count, ok bool) {
	ch := o.Choice
	if ch.Experiment == "" {
		return Count{}, false
	}
	c = Count{Model: m.cfg.Name, Experiment: ch.Experiment}
	switch {
	case ch.Assignment == control.AssignOverride:
		c.Metric = MetricOverrides
	case ch.Assignment == control.AssignExcluded:
		c.Metric = MetricExcluded
	case ch.Arm == "":
		return Count{}, false
	case o.Err != nil:
		c.Metric, c.Arm, c.Label = MetricErrors, ch.Arm, ErrorCode(o.Err).String()
	default:
		c.Metric, c.Arm, c.Label = MetricRequests, ch.Arm, ch.Assignment.String()
	}
	return c, true
}
