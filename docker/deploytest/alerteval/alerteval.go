// Package alerteval evaluates Prometheus alerting rule files on given
// series with Prometheus' own code, the way `promtool test rules` does:
// the series are a promqltest load script (package promql/promqltest),
// loaded into Prometheus' test storage up to each evaluation time; the rule
// files are loaded by Prometheus' rule manager (rules.Manager.LoadGroups,
// which parses and validates them with model/rulefmt); and every group is
// evaluated at the given times by the PromQL engine, `for:` and
// `keep_firing_for:` included. Nothing here interprets PromQL.
//
// docker/deploytest's TestAlertRulesEvaluate uses it on hand-made series,
// and cmd/alerteval on two scrapes of a real sidecar's /metrics
// (tests/test_sidecar_sampling.py).
package alerteval

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/promslog"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/rules"
)

// Interval is the rule groups' evaluation interval when a group sets none:
// Prometheus' default global evaluation_interval. Evaluate evaluates at the
// times it is given, whatever the interval.
const Interval = time.Minute

// Alert is an alert active after an evaluation: pending while its
// expression has held for less than the rule's for:, then firing.
type Alert struct {
	// Name is the alerting rule's name.
	Name string `json:"alert"`
	// State is "pending" or "firing".
	State string `json:"state"`
	// Labels are the alert's: alertname, the rule's labels and the
	// expression's result's.
	Labels map[string]string `json:"labels"`
	// Annotations are the rule's, their templates expanded.
	Annotations map[string]string `json:"annotations"`
	// Value is the expression's value at the evaluation.
	Value float64 `json:"value"`
	// ActiveAt is when the expression started to hold.
	ActiveAt time.Time `json:"active_at"`
}

// Evaluate loads the series of load, a promqltest load script whose first
// sample is at start, and evaluates the alerting rules of files at each of
// times in turn (increasing), as Prometheus' rule manager does; it returns
// the alerts active after each evaluation, sorted by name and labels.
func Evaluate(load string, start time.Time, files []string, times []time.Time) ([][]Alert, error) {
	if !slices.IsSortedFunc(times, time.Time.Compare) {
		return nil, errors.New("alerteval: the evaluation times must increase")
	}
	suite, err := promqltest.NewLazyLoader(load, promqltest.LazyLoaderOpts{
		StartTime: start, EnableAtModifier: true, EnableNegativeOffset: true,
	})
	if err != nil {
		return nil, fmt.Errorf("alerteval: the series: %w", err)
	}
	defer suite.Close()

	m := rules.NewManager(&rules.ManagerOptions{
		QueryFunc:    rules.EngineQueryFunc(suite.QueryEngine(), suite.Storage()),
		AppendableV2: suite.Storage(),
		Context:      suite.Context(),
		NotifyFunc:   func(context.Context, string, ...*rules.Alert) {},
		Logger:       promslog.NewNopLogger(),
	})
	loaded, errs := m.LoadGroups(Interval, labels.EmptyLabels(), "", nil, false, files...)
	if len(errs) > 0 {
		return nil, fmt.Errorf("alerteval: %w", errors.Join(errs...))
	}
	var groups []*rules.Group
	for _, key := range slices.Sorted(maps.Keys(loaded)) {
		g := loaded[key]
		groups = append(groups, g)
		for _, r := range g.Rules() {
			if a, ok := r.(*rules.AlertingRule); ok {
				// Nothing to restore from: the rule writes its ALERTS
				// series from the first evaluation on (as promtool's).
				a.SetRestored(true)
			}
		}
	}

	out := make([][]Alert, 0, len(times))
	for _, ts := range times {
		var evalErr error
		suite.WithSamplesTill(ts, func(err error) {
			if err != nil {
				evalErr = fmt.Errorf("alerteval: loading the series till %s: %w", ts.UTC().Format(time.RFC3339Nano), err)
				return
			}
			for _, g := range groups {
				g.Eval(suite.Context(), ts)
				for _, r := range g.Rules() {
					if err := r.LastError(); err != nil {
						evalErr = errors.Join(evalErr, fmt.Errorf("alerteval: %s at %s: %w", r.Name(), ts.UTC().Format(time.RFC3339Nano), err))
					}
				}
			}
		})
		if evalErr != nil {
			return nil, evalErr
		}
		out = append(out, active(groups))
	}
	return out, nil
}

// active lists the groups' active alerts, sorted by name and labels.
func active(groups []*rules.Group) []Alert {
	var out []Alert
	for _, g := range groups {
		for _, r := range g.AlertingRules() {
			for _, a := range r.ActiveAlerts() {
				out = append(out, Alert{
					Name:        r.Name(),
					State:       a.State.String(),
					Labels:      a.Labels.Map(),
					Annotations: a.Annotations.Map(),
					Value:       a.Value,
					ActiveAt:    a.ActiveAt,
				})
			}
		}
	}
	slices.SortFunc(out, func(a, b Alert) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return labels.Compare(labels.FromMap(a.Labels), labels.FromMap(b.Labels))
	})
	return out
}
