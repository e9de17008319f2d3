package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc/codes"

	"github.com/mergectl/react-triton/internal/buildinfo"
	"github.com/mergectl/react-triton/sidecar/pipeline"
)

// Metrics are the sidecar's Prometheus metrics, all prefixed react_. Their
// labels take values only from bounded sets: the configured model and
// components names, the protocol, the preference's source, gRPC code
// names, pipeline stages and cache results, and the configured experiment
// and arm names; never a raw preference or an experiment key.
type Metrics struct {
	reg     *prometheus.Registry
	exp     *experimentMetrics
	adm     *admissionMetrics
	surface *surfaceMetrics
	shadow  *pipeline.ShadowMetrics

	requests      *prometheus.CounterVec   // model, protocol, source
	errors        *prometheus.CounterVec   // model, protocol, code
	duration      *prometheus.HistogramVec // model, stage
	rows          *prometheus.CounterVec   // model
	lookups       *prometheus.CounterVec   // components, result
	solves        *prometheus.HistogramVec // components
	forms         *prometheus.HistogramVec // components
	solveErrors   *prometheus.CounterVec   // components
	rejected      *prometheus.CounterVec   // protocol, reason
	reloads       *prometheus.CounterVec   // result
	reloadOK      prometheus.Gauge
	reloadSuccess prometheus.Gauge
}

// latencyBuckets span 100 µs to about 13 s.
var latencyBuckets = prometheus.ExponentialBuckets(100e-6, 2, 18)

// New registers the sidecar's metrics, with the Go and process
// collectors, on a new registry.
func New() *Metrics {
	m := &Metrics{
		reg:     prometheus.NewRegistry(),
		exp:     newExperimentMetrics(),
		adm:     newAdmissionMetrics(),
		surface: newSurfaceMetrics(),
		shadow:  pipeline.NewShadowMetrics(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "react_requests_total",
			Help: "Inference requests served for controllable models, by model, protocol and where the preference came from (header, parameter, preset, arm, default).",
		}, []string{"model", "protocol", "source"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "react_request_errors_total",
			Help: "Inference requests for controllable models that failed, by model, protocol and gRPC status code.",
		}, []string{"model", "protocol", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "react_request_duration_seconds",
			Help:    "Time of successful requests for controllable models, by stage: backbone (the backbone call), correction (W_p lookup, decoding, the correction, encoding), heads (the head calls) and total.",
			Buckets: latencyBuckets,
		}, []string{"model", "stage"}),
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "react_corrected_rows_total",
			Help: "Feature rows served by controllable models (the batch sizes summed).",
		}, []string{"model"}),
		lookups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "react_wp_cache_lookups_total",
			Help: "W_p lookups by components entry and result: pinned (the default or a preset), hit or miss (solved for the request).",
		}, []string{"components", "result"}),
		solves: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "react_wp_solve_duration_seconds",
			Help:    "Time for a new preference to become usable: the weighted sums and the Cholesky factorisation of C_p (the whole W_p for the default and the presets), the latency a request with a new preference waits for.",
			Buckets: latencyBuckets,
		}, []string{"components"}),
		forms: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "react_wp_form_duration_seconds",
			Help:    "Time to form a new preference's W_p from its factorisation (two triangular solves), in the background.",
			Buckets: latencyBuckets,
		}, []string{"components"}),
		solveErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "react_wp_solve_errors_total",
			Help: "W_p solves that failed (C_p not positive definite or too ill-conditioned).",
		}, []string{"components"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "react_rejected_requests_total",
			Help: "Inference requests the sidecar refused before they reached Triton, by protocol and reason: malformed, too_large, encoding, too_many_inputs, too_many_outputs, too_many_parameters, memory (limits.max_inflight_bytes), presets_only. A gRPC message over limits.max_request_bytes as the sidecar started is refused by grpc itself and not counted here.",
		}, []string{"protocol", "reason"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "react_config_reloads_total",
			Help: "Reloads of the configuration and components files, by result (success, failure).",
		}, []string{"result"}),
		reloadOK: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "react_config_last_reload_successful",
			Help: "Whether the last reload of the configuration and components files succeeded (1) or failed, leaving the previous state serving (0).",
		}),
		reloadSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "react_config_last_reload_success_timestamp_seconds",
			Help: "When the configuration was last loaded successfully, in seconds since the epoch.",
		}),
	}
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "react_build_info",
		Help:        "The sidecar's version, as a label; always 1.",
		ConstLabels: prometheus.Labels{"version": buildinfo.Version()},
	})
	info.Set(1)
	m.reg.MustRegister(m.requests, m.errors, m.duration, m.rows, m.lookups, m.solves, m.forms, m.solveErrors, m.rejected,
		m.reloads, m.reloadOK, m.reloadSuccess, info,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.reg.MustRegister(m.exp.collectors()...)
	m.reg.MustRegister(m.adm.collectors()...)
	m.reg.MustRegister(m.surface.collectors()...)
	if err := m.shadow.Register(m.reg); err != nil {
		panic(err) // a name registered twice: a programming error, as MustRegister
	}
	m.reloadOK.Set(1)
	m.reloadSuccess.SetToCurrentTime()
	return m
}

// Registerer returns the registry /metrics serves, for the collectors of
// other packages (the feedback window's, experiment/feedback).
func (m *Metrics) Registerer() prometheus.Registerer { return m.reg }

// Lookup implements control.Observer.
func (m *Metrics) Lookup(components, result string) {
	m.lookups.WithLabelValues(components, result).Inc()
}

// Formed implements control.Observer.
func (m *Metrics) Formed(components string, took time.Duration, err error) {
	if err != nil {
		m.solveErrors.WithLabelValues(components).Inc()
		return
	}
	m.forms.WithLabelValues(components).Observe(took.Seconds())
}

// Solved implements control.Observer.
func (m *Metrics) Solved(components string, took time.Duration, err error) {
	if err != nil {
		m.solveErrors.WithLabelValues(components).Inc()
		return
	}
	m.solves.WithLabelValues(components).Observe(took.Seconds())
}

// Served records a request for a controllable model: its result, or the
// status code it failed with.
func (m *Metrics) Served(model, protocol string, res *pipeline.Result, total time.Duration, code codes.Code) {
	m.exp.served(model, res, total, code)
	if code != codes.OK {
		m.errors.WithLabelValues(model, protocol, code.String()).Inc()
		return
	}
	m.requests.WithLabelValues(model, protocol, res.Choice.Source.String()).Inc()
	if res.Choice.Gridded {
		m.adm.gridded.WithLabelValues(model).Inc()
	}
	m.rows.WithLabelValues(model).Add(float64(res.Rows))
	m.duration.WithLabelValues(model, "backbone").Observe(res.Timing.Backbone.Seconds())
	m.duration.WithLabelValues(model, "correction").Observe(res.Timing.Correction.Seconds())
	m.duration.WithLabelValues(model, "heads").Observe(res.Timing.Heads.Seconds())
	m.duration.WithLabelValues(model, "total").Observe(total.Seconds())
}

// Reject counts a request refused before it reached Triton.
func (m *Metrics) Reject(protocol, reason string) {
	m.rejected.WithLabelValues(protocol, reason).Inc()
}

// Reloaded records the outcome of a reload.
func (m *Metrics) Reloaded(ok bool) {
	if ok {
		m.reloads.WithLabelValues("success").Inc()
		m.reloadOK.Set(1)
		m.reloadSuccess.SetToCurrentTime()
		return
	}
	m.reloads.WithLabelValues("failure").Inc()
	m.reloadOK.Set(0)
}

// Shadow returns the metrics of the experiments' shadow comparisons, for
// the controllable models' builds (pipeline.Options.Shadow).
func (m *Metrics) Shadow() *pipeline.ShadowMetrics { return m.shadow }

// Handler serves /metrics and /healthz, for the metrics listener. Go's
// profiles are not here: see frontdoor.PprofHandler.
func (m *Metrics) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg}))
	mux.HandleFunc("/healthz", healthz)
	return mux
}

// healthz answers 200 while the process serves, whatever Triton's state:
// a liveness probe for the sidecar alone (docs/deploy.md). Readiness, which
// depends on Triton and the controllable models, is /v2/health/ready on the
// HTTP listener.
func healthz(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write([]byte("ok\n"))
}
