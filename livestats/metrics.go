package livestats

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// The metrics' names. Their labels take values from bounded sets only:
// the configured models and tasks, the reasons, the results.
const (
	// MetricRequests counts the requests sampled, whose rows were
	// accumulated: {model, task}.
	MetricRequests = "react_sampling_requests_total"
	// MetricSkipped counts the requests to a sampled model that were not
	// sampled: {model, task, reason}; reason is opt_out (the opt-out
	// header), fraction (not drawn), saturated (Triton saturated by the
	// caller's signal), concurrency (max_concurrent samples in flight),
	// failed (the backbone's or the expert's call failed) or invalid (rows
	// of the wrong size, or with NaN or infinite values).
	MetricSkipped = "react_sampling_skipped_total"
	// MetricRows counts the rows accumulated: {task, part}; part is fit
	// or heldout (the rows held out for choosing β, in the fit's sums too).
	MetricRows = "react_sampling_rows_total"
	// MetricInFlight is the samples admitted and not yet added or skipped.
	MetricInFlight = "react_sampling_in_flight"
	// MetricCheckpoints counts the files written: {result}, ok or error.
	MetricCheckpoints = "react_sampling_checkpoints_total"
	// MetricLastCheckpoint is the Unix time of the last file written.
	MetricLastCheckpoint = "react_sampling_last_checkpoint_timestamp_seconds"
	// MetricStaleness is a task's live relative reconstruction error
	// Σ ‖Ŵ_t z_mtl − z_ind‖² / Σ ‖z_ind‖² over the rows sampled since its
	// correction was loaded: {task}; exported once min_samples rows are in.
	MetricStaleness = "react_staleness_recon_error"
	// MetricStalenessRecorded is the same error on the calibration
	// samples, recorded in the components file: {task}; absent when the
	// file does not record it.
	MetricStalenessRecorded = "react_staleness_recon_error_recorded"
	// MetricStalenessRows is the number of rows MetricStaleness is over:
	// {task}.
	MetricStalenessRows = "react_staleness_rows"
	// MetricResidual and MetricTarget are Σ ‖Ŵ_t z_mtl − z_ind‖² and
	// Σ ‖z_ind‖² over every row sampled while a correction was loaded:
	// {task}. Their rates' ratio is the live error over any window, summed
	// over replicas: sum(rate(residual[1h])) / sum(rate(target[1h])).
	MetricResidual = "react_staleness_residual_squares_total"
	MetricTarget   = "react_staleness_target_squares_total"
)

var (
	descRequests = prometheus.NewDesc(MetricRequests,
		"Requests sampled for live calibration (their rows accumulated), by model and task.", []string{"model", "task"}, nil)
	descSkipped = prometheus.NewDesc(MetricSkipped,
		"Requests to a sampled model not sampled, by model, task and reason: opt_out, fraction (not drawn), saturated, concurrency (max_concurrent in flight), failed (backbone or expert call), invalid (rows refused).",
		[]string{"model", "task", "reason"}, nil)
	descRows = prometheus.NewDesc(MetricRows,
		"Rows accumulated for live calibration, by task and part: fit, or heldout (kept apart for choosing beta).", []string{"task", "part"}, nil)
	descInFlight = prometheus.NewDesc(MetricInFlight,
		"Samples admitted and not yet accumulated or skipped.", nil, nil)
	descCheckpoints = prometheus.NewDesc(MetricCheckpoints,
		"Live statistics files written, by result: ok or error.", []string{"result"}, nil)
	descLastCheckpoint = prometheus.NewDesc(MetricLastCheckpoint,
		"Unix time of the last live statistics file written.", nil, nil)
	descStaleness = prometheus.NewDesc(MetricStaleness,
		"Live relative reconstruction error of the task's own correction on the rows sampled since it was loaded (sum of squared residuals over sum of squared expert features), by task.", []string{"task"}, nil)
	descStalenessRecorded = prometheus.NewDesc(MetricStalenessRecorded,
		"The same relative reconstruction error on the calibration samples, recorded in the components file, by task.", []string{"task"}, nil)
	descStalenessRows = prometheus.NewDesc(MetricStalenessRows,
		"Rows the live reconstruction error is over, by task.", []string{"task"}, nil)
	descResidual = prometheus.NewDesc(MetricResidual,
		"Sum of squared residuals of the task's loaded correction on sampled rows, by task.", []string{"task"}, nil)
	descTarget = prometheus.NewDesc(MetricTarget,
		"Sum of squared norms of the expert features of the same rows, by task.", []string{"task"}, nil)
)

// Describe sends the descriptions of the sampler's metrics.
func (s *Sampler) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRequests, descSkipped, descRows, descInFlight, descCheckpoints, descLastCheckpoint,
		descStaleness, descStalenessRecorded, descStalenessRows, descResidual, descTarget} {
		ch <- d
	}
}

// Collect sends the sampler's metrics: a consistent view of each task,
// under its lock in turn.
func (s *Sampler) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, ms := range s.set.Models {
		m := s.models[ms.Name]
		counter(descRequests, float64(m.requests.Load()), m.name, m.task.name)
		for r := OptOut; r < numReasons; r++ {
			counter(descSkipped, float64(m.skipped[r].Load()), m.name, m.task.name, r.String())
		}
	}
	gauge(descInFlight, float64(s.InFlight()))
	counter(descCheckpoints, float64(s.results[0].Load()), "ok")
	counter(descCheckpoints, float64(s.results[1].Load()), "error")
	if t := s.written.Load(); t > 0 {
		gauge(descLastCheckpoint, float64(t))
	}
	for _, t := range s.order {
		t.mu.Lock()
		fit, held := t.fitRows, t.heldRows
		gen, resid, target, rows := t.stale.gen, t.stale.resid, t.stale.target, t.stale.rows
		residTotal, targetTotal := t.stale.residTotal, t.stale.targetTotal
		t.mu.Unlock()
		counter(descRows, float64(fit), t.name, "fit")
		counter(descRows, float64(held), t.name, "heldout")
		if targetTotal > 0 || gen != nil {
			counter(descResidual, residTotal, t.name)
			counter(descTarget, targetTotal, t.name)
		}
		if gen == nil {
			continue
		}
		gauge(descStalenessRows, float64(rows), t.name)
		if rows >= s.set.MinSamples && target > 0 {
			gauge(descStaleness, resid/target, t.name)
		}
		if gen.recorded > 0 {
			gauge(descStalenessRecorded, gen.recorded, t.name)
		}
	}
}

// Register registers the sampler's metrics with reg.
func (s *Sampler) Register(reg prometheus.Registerer) error {
	if err := reg.Register(s); err != nil {
		return fmt.Errorf("livestats: registering the metrics: %w", err)
	}
	return nil
}
