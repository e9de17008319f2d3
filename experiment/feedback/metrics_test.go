package feedback

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestMetrics reads the metrics back after a scripted sequence; the
// expected values are counted by hand from the script.
func TestMetrics(t *testing.T) {
	w, c := newTestWindow(t, Options{MaxEntries: 3, MaxAge: time.Minute, Remembered: 10})
	runSteps(t, w, c, []step{
		{record: "1", arm: "A", held: -1},
		{record: "2", arm: "A", held: -1},
		{record: "3", arm: "B", held: -1},
		{join: fb(label("1", 3)), score: 1, held: -1},                          // A, label, fashion: matched
		{join: fb(label("2", 5)), score: 0, held: -1},                          // A, label, fashion: missed
		{join: fb(reward("3", 0.5)), score: 0.5, held: -1},                     // B, reward
		{join: fb(reward("3", 0.5)), reason: Duplicate, held: -1},              // m duplicate
		{join: fb(reward("9", 0.5)), reason: Unknown, held: -1},                // m unknown
		{join: fb(reward("9", 0.5)), model: "nope", reason: Unknown, held: -1}, // "" unknown
		{join: fb(reward("1", 2)), reason: Invalid, held: -1},                  // m invalid
		{record: "4", arm: "B", held: -1},
		{record: "5", arm: "B", held: -1},
		{record: "6", arm: "B", held: 3},
		{record: "7", arm: "B", held: 3},                      // 4 evicted
		{record: "5", arm: "B", held: 3},                      // 5 replaced
		{wait: 2 * time.Minute, held: 0},                      // 6, 7, 5 expired
		{join: fb(reward("4", 1)), reason: Expired, held: -1}, // m expired
		{record: "8", arm: "B", held: 1},
		{join: fb(reward("8", 0.25)), score: 0.25, held: 0}, // B, reward
	})
	want := `
# HELP react_experiment_feedback_dropped_total Requests that left the feedback window without feedback, by model, experiment, arm and reason: expired (older than the window's age), evicted (pushed out by newer requests), replaced (recorded again under the same id).
# TYPE react_experiment_feedback_dropped_total counter
react_experiment_feedback_dropped_total{arm="A",experiment="ab",model="m",reason="evicted"} 0
react_experiment_feedback_dropped_total{arm="A",experiment="ab",model="m",reason="expired"} 0
react_experiment_feedback_dropped_total{arm="A",experiment="ab",model="m",reason="replaced"} 0
react_experiment_feedback_dropped_total{arm="B",experiment="ab",model="m",reason="evicted"} 1
react_experiment_feedback_dropped_total{arm="B",experiment="ab",model="m",reason="expired"} 3
react_experiment_feedback_dropped_total{arm="B",experiment="ab",model="m",reason="replaced"} 1
# HELP react_experiment_feedback_recorded_total Requests served with an experiment's arm and recorded in the feedback window (they had an id, and can take feedback), by model, experiment and arm.
# TYPE react_experiment_feedback_recorded_total counter
react_experiment_feedback_recorded_total{arm="A",experiment="ab",model="m"} 2
react_experiment_feedback_recorded_total{arm="B",experiment="ab",model="m"} 7
# HELP react_experiment_feedback_rejected_total Feedback not joined, by model ("" for a model never recorded) and reason: unknown id, expired (came after its request left the window), duplicate, invalid.
# TYPE react_experiment_feedback_rejected_total counter
react_experiment_feedback_rejected_total{model="",reason="unknown"} 1
react_experiment_feedback_rejected_total{model="m",reason="duplicate"} 1
react_experiment_feedback_rejected_total{model="m",reason="expired"} 1
react_experiment_feedback_rejected_total{model="m",reason="invalid"} 1
react_experiment_feedback_rejected_total{model="m",reason="unknown"} 1
# HELP react_experiment_feedback_window_capacity The most requests the feedback window holds.
# TYPE react_experiment_feedback_window_capacity gauge
react_experiment_feedback_window_capacity 3
# HELP react_experiment_feedback_window_entries Requests the feedback window holds, waiting for their feedback.
# TYPE react_experiment_feedback_window_entries gauge
react_experiment_feedback_window_entries 0
# HELP react_experiment_outcome_score_squares_total Sum of the squares of the outcomes' scores, by model, experiment, arm, kind and task.
# TYPE react_experiment_outcome_score_squares_total counter
react_experiment_outcome_score_squares_total{arm="A",experiment="ab",kind="label",model="m",task="fashion"} 1
react_experiment_outcome_score_squares_total{arm="B",experiment="ab",kind="reward",model="m",task=""} 0.3125
# HELP react_experiment_outcome_score_total Sum of the outcomes' scores (1 or 0 for a label the served prediction matched or missed, the reward for a reward), by model, experiment, arm, kind and task.
# TYPE react_experiment_outcome_score_total counter
react_experiment_outcome_score_total{arm="A",experiment="ab",kind="label",model="m",task="fashion"} 1
react_experiment_outcome_score_total{arm="B",experiment="ab",kind="reward",model="m",task=""} 0.75
# HELP react_experiment_outcomes_total Outcomes joined to the requests they are about, by model, experiment, arm, kind (label: a true class; reward: a number in [0, 1]) and task (a label's task, "" for a reward).
# TYPE react_experiment_outcomes_total counter
react_experiment_outcomes_total{arm="A",experiment="ab",kind="label",model="m",task="fashion"} 2
react_experiment_outcomes_total{arm="B",experiment="ab",kind="reward",model="m",task=""} 2
`
	reg := prometheus.NewPedanticRegistry()
	if err := w.Register(reg); err != nil {
		t.Fatal(err)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	if err := w.Register(reg); err == nil {
		t.Error("registered twice")
	}
	problems, err := testutil.CollectAndLint(w)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// TestDropReasonAtMaxAge: a request pushed out when exactly MaxAge has
// passed is still joinable, so it is counted as evicted; a nanosecond
// later the sweep has expired it first.
func TestDropReasonAtMaxAge(t *testing.T) {
	for _, tc := range []struct {
		wait             time.Duration
		evicted, expired int
	}{
		{time.Minute, 1, 0},
		{time.Minute + time.Nanosecond, 0, 1},
	} {
		t.Run(tc.wait.String(), func(t *testing.T) {
			w, c := newTestWindow(t, Options{MaxEntries: 1, MaxAge: time.Minute})
			runSteps(t, w, c, []step{
				{record: "1", arm: "A", held: 1},
				{wait: tc.wait, held: -1},
				{record: "2", arm: "A", held: 1},
				{join: fb(label("1", 3)), reason: Expired, held: 1},
			})
			want := fmt.Sprintf(`
# HELP react_experiment_feedback_dropped_total Requests that left the feedback window without feedback, by model, experiment, arm and reason: expired (older than the window's age), evicted (pushed out by newer requests), replaced (recorded again under the same id).
# TYPE react_experiment_feedback_dropped_total counter
react_experiment_feedback_dropped_total{arm="A",experiment="ab",model="m",reason="evicted"} %d
react_experiment_feedback_dropped_total{arm="A",experiment="ab",model="m",reason="expired"} %d
react_experiment_feedback_dropped_total{arm="A",experiment="ab",model="m",reason="replaced"} 0
`, tc.evicted, tc.expired)
			if err := testutil.CollectAndCompare(w, strings.NewReader(want), MetricDropped); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestMetricsAfterJoinRequest: the transports' entry points count a body
// that does not parse as invalid, under the model it was sent to.
func TestMetricsAfterJoinRequest(t *testing.T) {
	w, _ := newTestWindow(t, Options{})
	if err := w.Record("1", served("A")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.JoinRequest("m", []byte(`{"id": "1", "label": "three"}`)); ReasonOf(err) != Invalid {
		t.Fatalf("%v", err)
	}
	j, err := w.JoinRequest("m", []byte(`{"id": "1", "label": 3}`))
	if err != nil || j.Score != 1 || j.Arm != "A" {
		t.Fatalf("%+v, %v", j, err)
	}
	want := `
# HELP react_experiment_feedback_rejected_total Feedback not joined, by model ("" for a model never recorded) and reason: unknown id, expired (came after its request left the window), duplicate, invalid.
# TYPE react_experiment_feedback_rejected_total counter
react_experiment_feedback_rejected_total{model="m",reason="invalid"} 1
# HELP react_experiment_outcomes_total Outcomes joined to the requests they are about, by model, experiment, arm, kind (label: a true class; reward: a number in [0, 1]) and task (a label's task, "" for a reward).
# TYPE react_experiment_outcomes_total counter
react_experiment_outcomes_total{arm="A",experiment="ab",kind="label",model="m",task="fashion"} 1
`
	if err := testutil.CollectAndCompare(w, strings.NewReader(want), MetricRejected, MetricOutcomes); err != nil {
		t.Error(err)
	}
}
