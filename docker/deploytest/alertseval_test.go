package deploytest

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mergectl/react-triton/docker/deploytest/alerteval"
)

// The series below are sampled every step for steps steps (8 hours) from
// the Unix epoch, and the rules evaluated at every sample, as a Prometheus
// scraping and evaluating every 5 minutes would.
const (
	step  = 5 * time.Minute
	steps = 96
)

// recorded is react_staleness_recon_error_recorded in the series below.
const recorded = 0.05

// target is the labels Prometheus adds to a sidecar pod's series: job and
// instance, and pod (the relabelling docs/deploy.md assumes).
func target(pod string) map[string]string {
	return map[string]string{"job": "react-sidecar", "instance": pod + ":8003", "pod": pod}
}

// series is a series' labels in promqltest's notation: {name="value", ...}.
func series(name string, labels map[string]string, more ...string) string {
	l := maps.Clone(labels)
	for i := 0; i+1 < len(more); i += 2 {
		l[more[i]] = more[i+1]
	}
	var pairs []string
	for _, k := range slices.Sorted(maps.Keys(l)) {
		pairs = append(pairs, fmt.Sprintf("%s=%q", k, l[k]))
	}
	return name + "{" + strings.Join(pairs, ", ") + "}"
}

// staleness is the series one sidecar exports for a task's live error
// (docs/contracts.md), in promqltest's notation: every step, target
// squares grow by 1,000 and residual squares by 1,000 × ratio × recorded
// (a live error of ratio times the recorded one), and rows sampled by rows
// (a fifth held out).
func staleness(task, pod string, ratio float64, rows int) string {
	l := target(pod)
	l["task"] = task
	return fmt.Sprintf("\n  %s %gx%d", series("react_staleness_recon_error_recorded", l), recorded, steps) +
		fmt.Sprintf("\n  %s 0+%gx%d", series("react_staleness_residual_squares_total", l), 1000*ratio*recorded, steps) +
		fmt.Sprintf("\n  %s 0+1000x%d", series("react_staleness_target_squares_total", l), steps) +
		fmt.Sprintf("\n  %s 0+%dx%d", series("react_sampling_rows_total", l, "part", "fit"), rows-rows/5, steps) +
		fmt.Sprintf("\n  %s 0+%dx%d", series("react_sampling_rows_total", l, "part", "heldout"), rows/5, steps)
}

// sampler is the series of one sidecar's sampler: nothing in flight, and
// checkpoint, the notation of the last checkpoint's Unix time ("" for no
// checkpoint yet: the gauge is absent).
func sampler(pod, checkpoint string) string {
	out := fmt.Sprintf("\n  %s 0x%d", series("react_sampling_in_flight", target(pod)), steps)
	if checkpoint != "" {
		out += fmt.Sprintf("\n  %s %s", series("react_sampling_last_checkpoint_timestamp_seconds", target(pod)), checkpoint)
	}
	return out
}

// wantAlert is an alert a case expects: pending from the evaluation at
// pending on, firing from firing on; labels are the alert's besides
// alertname and severity.
type wantAlert struct {
	name            string
	labels          map[string]string
	pending, firing time.Duration
	value           float64 // the expression's value while active, to 1e-9 relative (0: not checked)
	summaryIncludes string
}

// stale and notWriting are the shipped alerts (docker/prometheus-rules.yml).
const (
	stale      = "ReactCorrectionStale"
	notWriting = "ReactSamplingNotWriting"
)

// TestAlertRulesEvaluate evaluates the shipped alert rules with
// Prometheus' rule manager and PromQL engine (package alerteval) on series
// shaped as the sidecar exports them, pooled over two replicas, every 5
// minutes for 8 hours; each case's alerts and the times they go pending
// and firing are worked out by hand in its comment.
//
// ReactCorrectionStale: counters that grow linearly from zero give rates
// in the ratio of their growths; increase(rows[6h]) at time T (not past
// 6 h) is the rows sampled in [0, T] (no extrapolation below zero). So with
// 100 rows every 5 minutes the rows condition holds from 55 minutes on
// (1,100 > 1,000; 1,000 at 50 minutes does not), and for: 1h makes it fire
// at 115 minutes.
func TestAlertRulesEvaluate(t *testing.T) {
	every := func(pods ...string) string { // samplers that checkpoint every 5 minutes
		var out string
		for _, p := range pods {
			out += sampler(p, fmt.Sprintf("0+300x%d", steps))
		}
		return out
	}
	staleFashion := wantAlert{name: stale, labels: map[string]string{"task": "fashion"}, pending: 55 * time.Minute,
		firing: 115 * time.Minute, value: 4 * recorded, summaryIncludes: "task fashion"}
	for _, tc := range []struct {
		name   string
		series string
		want   []wantAlert
	}{
		{"fresh inputs, 1.19 times the recorded error: quiet",
			staleness("fashion", "react-0", 1.19, 50) + staleness("fashion", "react-1", 1.19, 50), nil},
		{"drift, 4.0 times the recorded error, 7,200 rows in 6 h: fires after for",
			staleness("fashion", "react-0", 4, 50) + staleness("fashion", "react-1", 4, 50), []wantAlert{staleFashion}},
		// 12 rows every 5 minutes: 864 in 6 h.
		{"drift, but fewer than 1,000 rows in 6 h: quiet",
			staleness("fashion", "react-0", 4, 6) + staleness("fashion", "react-1", 4, 6), nil},
		// Residual squares 100 and 45 a step against 1,000 and 1,000:
		// 145 / 2,000 = 1.45 times the recorded error pooled, while one
		// replica alone is at 2.0.
		{"pooled over the replicas, 2.0 and 0.9 times: quiet",
			staleness("fashion", "react-0", 2, 50) + staleness("fashion", "react-1", 0.9, 50), nil},
		{"one task drifted, the other not: fires for the drifted one",
			staleness("fashion", "react-0", 4, 50) + staleness("fashion", "react-1", 4, 50) +
				staleness("mnist", "react-0", 1.19, 50) + staleness("mnist", "react-1", 1.19, 50),
			[]wantAlert{staleFashion}},

		{"both replicas checkpoint every 5 minutes: quiet", every("react-0", "react-1"), nil},
		// react-1's last checkpoint is at 7,200 s: time() − 7,200 < 900
		// fails from 8,100 s (135 minutes) on; for: 30m.
		{"a replica stops writing at 2 h: fires 15 + 30 minutes later, for it",
			every("react-0") + sampler("react-1", fmt.Sprintf("0+300x24 7200x%d", steps-24)),
			[]wantAlert{{name: notWriting, labels: target("react-1"), pending: 135 * time.Minute,
				firing: 165 * time.Minute, summaryIncludes: "sidecar react-1"}}},
		// No checkpoint yet (no row sampled): the gauge is absent.
		{"no checkpoint at all: fires after for, for each replica",
			sampler("react-0", "") + sampler("react-1", ""),
			[]wantAlert{
				{name: notWriting, labels: target("react-0"), firing: 30 * time.Minute, summaryIncludes: "sidecar react-0"},
				{name: notWriting, labels: target("react-1"), firing: 30 * time.Minute, summaryIncludes: "sidecar react-1"},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var times []time.Time
			for i := 0; i <= steps; i++ {
				times = append(times, time.Unix(0, 0).Add(time.Duration(i)*step))
			}
			got, err := alerteval.Evaluate("load 5m"+tc.series, time.Unix(0, 0), []string{repoPath(strings.Split(rulesFile, "/")...)}, times)
			if err != nil {
				t.Fatal(err)
			}
			for i, ts := range times {
				at := ts.Sub(time.Unix(0, 0))
				var want []wantAlert
				for _, w := range tc.want {
					if at >= w.pending {
						want = append(want, w)
					}
				}
				if len(got[i]) != len(want) {
					t.Fatalf("at %v: %d alerts, want %d: %+v", at, len(got[i]), len(want), got[i])
				}
				for j, w := range want {
					checkAlert(t, at, got[i][j], w)
				}
			}
		})
	}
}

// checkAlert compares an alert active at time at with the one wanted.
func checkAlert(t *testing.T, at time.Duration, a alerteval.Alert, w wantAlert) {
	t.Helper()
	state := "pending"
	if at >= w.firing {
		state = "firing"
	}
	labels := map[string]string{"alertname": w.name, "severity": "warning"}
	maps.Copy(labels, w.labels)
	if a.Name != w.name || a.State != state || !maps.Equal(a.Labels, labels) {
		t.Fatalf("at %v: %s %s %v, want %s %s %v", at, a.Name, a.State, a.Labels, w.name, state, labels)
	}
	if got := a.ActiveAt.Sub(time.Unix(0, 0)); got != w.pending {
		t.Errorf("at %v: %s active since %v, want %v", at, w.name, got, w.pending)
	}
	if w.value != 0 && math.Abs(a.Value-w.value) > 1e-9*w.value {
		t.Errorf("at %v: %s's value %v, want %v", at, w.name, a.Value, w.value)
	}
	if !strings.Contains(a.Annotations["summary"], w.summaryIncludes) {
		t.Errorf("at %v: %s's summary %q does not name %q", at, w.name, a.Annotations["summary"], w.summaryIncludes)
	}
}
