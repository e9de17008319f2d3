// Package livestats calibrates from live traffic: it accumulates the ReACT
// statistics (S_t, G_t, N_t, Σ ‖z_ind‖²) of a sample of the requests a
// server already answers, per task, writes them as partial-statistics
// files that calibrate merge adds exactly, and measures how stale the
// correction in service has become.
//
// The sidecar owns the request path; this package owns the decisions and
// the sums. For each request to a model:
//
//	x, reason := sampler.Admit(livestats.Request{Model: name, OptOut: hasOptOutHeader, Saturated: tritonBusy})
//	if x != nil {
//		// after the response is sent, off the request's goroutine:
//		mtl, ind, err := runBackboneAndExpert(inputs, sampler.Backbone(), x.Expert())
//		if err != nil {
//			x.Skip(livestats.Failed)
//		} else {
//			x.Add(mtl, ind) // float32 rows, row-major rows×D
//		}
//	}
//
// where sampler comes from New(settings, D) (settings.Replica filled with
// DefaultReplica when the configuration leaves it out), and beside it go
// sampler.Run(ctx, report), which writes the files on a schedule and at
// shutdown, and sampler.Watch(components, options) when a
// components file is loaded. A Sampler is a prometheus.Collector of the
// counters of what was sampled and skipped, and of the staleness gauges
// (Register).
//
// # Which requests
//
// Sampling is off unless Settings.Enabled. Only the models Settings.Models
// names are sampled, each for the one task it maps to; a request carrying
// Settings.OptOutHeader (with any value) never is. Of the rest, a fixed
// share (Settings.Fraction) is drawn by a hash of a counter of requests,
// deterministic and exact in the long run. A drawn request is skipped when
// the caller says Triton is saturated, or when Settings.MaxConcurrent
// samples are already in flight: sampling never queues, so it never holds
// memory or goroutines beyond that bound, and the request it samples is
// never delayed (the caller runs the sample after the response). No input
// is kept: only the sums, O(D²) per task.
//
// # Concurrency
//
// Each task's sums are behind a mutex of their own. Add checks and splits
// the rows and computes the staleness error outside it, and holds it only
// for the accumulation itself (O(rows·D²) floating-point work, bounded by
// the batch); different tasks accumulate in parallel; checkpoints copy one
// task's sums at a time (O(D²)) and write outside every lock. A channel to
// one goroutine owning the sums would serialise every task through it and
// need a queue bound of its own and a drain at shutdown; the mutexes, with
// the admission bound in front, need neither. The counters are atomics.
//
// # Held-out rows
//
// A share of each task's rows (Settings.Holdout), chosen by a fixed hash
// of the task's row counter, is also accumulated into separate held-out
// sums, so that calibrate merge --beta auto chooses β and the
// normalisation without labels, as calibrate fit --beta auto does (package
// react/heldout): it fits on every row less the held-out ones and scores
// on those.
//
// # Files
//
// Each replica writes its own file per window of traffic,
// <dir>/<replica>.<window start>.live.safetensors, in the
// partial-statistics format of package react/partialfile (whose Run is
// "live traffic" and whose Replica and Window say whose and when). The
// current window's file is rewritten atomically every Settings.Interval
// and at shutdown; every Settings.Window a new window, with empty sums and
// a new file, starts (Rotate), so that a refresh can take the recent
// windows only, and a restarted replica starts a window of its own
// instead of overwriting one. Memory: 4·8·D² bytes per task (every row's
// sums and the held-out ones), three times that while a file is written
// (the sums' copy, and its encoding), and 8·D² for a watched correction.
//
// # Staleness
//
// For a task whose correction Ŵ_t is watched, the live relative
// reconstruction error Σ ‖Ŵ_t z_mtl − z_ind‖² / Σ ‖z_ind‖² over the rows
// sampled since it was loaded (ReconError, from the rows) is exported
// beside the value recorded in the components file at calibration
// (react.TaskStats.ReconError; docs/method.md derives it from the sums).
// The recorded value is in-sample, so the live one sits somewhat above it
// even without drift; a rise well beyond that means the inputs drifted.
package livestats
