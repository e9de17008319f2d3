package main

import (
	"bytes"
	"encoding/json"
	"maps"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mergectl/react-triton/docker/deploytest/alerteval"
)

// rules is the shipped rule file.
var rules = filepath.Join("..", "..", "..", "prometheus-rules.yml")

// Two scrapes a minute apart, at t0 (Unix milliseconds), as the e2e test
// writes them.
const t0 = 1_800_000_000_000

// The sidecar's series at the two scrapes, in the e2e test's notation.
// Prometheus' increase() of a counter sampled only at a window's ends,
// evaluated at the end, is the difference extrapolated towards the range's
// start by half the window, or as far as the counter's zero if nearer:
// Δ + min(Δ/2, first). Here, with the rows counter at 300 then 1,010, that
// is 710 + 300 = 1,010 > 1,000 (the difference alone, 710, would not
// fire); the residual squares 40 + 10 = 50 and the target squares
// 100 + 50 = 150 give 1/3 > 1.5 × 0.05.
const drifted = `load 60000ms
  react_staleness_recon_error_recorded{task="fashion"} 0.05 0.05
  react_staleness_residual_squares_total{task="fashion"} 10 50
  react_staleness_target_squares_total{task="fashion"} 100 200
  react_sampling_rows_total{part="fit", task="fashion"} 300 1010
  react_sampling_rows_total{part="heldout", task="fashion"} 0 0
  react_sampling_in_flight 0 0
  react_sampling_last_checkpoint_timestamp_seconds 1799999990 1799999990
`

// TestRun: the command's output, the alerts active at the second scrape,
// against values worked out by hand.
func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name, series string
		want         []alerteval.Alert
	}{
		// A checkpoint 70 s before the second scrape: writing.
		{"drifted: the correction is stale", drifted, []alerteval.Alert{{
			Name: "ReactCorrectionStale", State: "pending", Value: 1.0 / 3, ActiveAt: time.UnixMilli(t0 + 60_000),
			Labels: map[string]string{"alertname": "ReactCorrectionStale", "severity": "warning", "task": "fashion"},
		}}},
		// Rows 400 then 1,000: 600 + 300 = 900. No checkpoint yet: the
		// alert is active from the first scrape on (the other needs two).
		{"too few rows, nothing written",
			strings.NewReplacer("300 1010", "400 1000", "react_sampling_last_checkpoint_timestamp_seconds", "# ").Replace(drifted),
			[]alerteval.Alert{{
				Name: "ReactSamplingNotWriting", State: "pending", Value: 0, ActiveAt: time.UnixMilli(t0),
				Labels: map[string]string{"alertname": "ReactSamplingNotWriting", "severity": "warning"},
			}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			series := filepath.Join(t.TempDir(), "window.load")
			if err := os.WriteFile(series, []byte(tc.series), 0o644); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := run([]string{"-rules", rules, "-series", series, "1800000000000", "1800000060000"}, &out); err != nil {
				t.Fatal(err)
			}
			var got []alerteval.Alert
			for dec := json.NewDecoder(&out); dec.More(); {
				var a alerteval.Alert
				if err := dec.Decode(&a); err != nil {
					t.Fatal(err)
				}
				got = append(got, a)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("%d alerts, want %d: %+v", len(got), len(tc.want), got)
			}
			for i, w := range tc.want {
				g := got[i]
				if g.Name != w.Name || g.State != w.State || !maps.Equal(g.Labels, w.Labels) ||
					math.Abs(g.Value-w.Value) > 1e-12 || !g.ActiveAt.Equal(w.ActiveAt) {
					t.Errorf("alert %d: %+v, want %+v", i, g, w)
				}
			}
		})
	}
}

// TestRunErrors: what the command refuses, with an error.
func TestRunErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.load")
	bad := filepath.Join(dir, "bad.load")
	for path, text := range map[string]string{good: drifted, bad: "load 1m\n  react_sampling_in_flight{ 0 0\n"} {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"-series", good, "1"},             // no rules
		{"-rules", rules, "1"},             // no series
		{"-rules", rules, "-series", good}, // no time
		{"-rules", rules, "-series", good, "1.5e12"},
		{"-rules", rules, "-series", filepath.Join(dir, "absent.load"), "1"},
		{"-rules", rules, "-series", bad, "1"},
		{"-rules", good, "-series", good, "1"},                               // not a rule file
		{"-rules", rules, "-series", good, "1800000060000", "1800000000000"}, // times decrease
	} {
		if err := run(args, &bytes.Buffer{}); err == nil {
			t.Errorf("alerteval %s: no error", strings.Join(args, " "))
		}
	}
}
