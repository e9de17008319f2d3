package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/sidecar/limits"
)

// admissionMetrics are the metrics of the W_p cache's budgets and of the
// admission of new preferences, labelled by the configured components
// names and bounded reasons.
type admissionMetrics struct {
	shed      *prometheus.CounterVec // components, reason
	cancelled *prometheus.CounterVec // components
	evicted   *prometheus.CounterVec // components
	gridded   *prometheus.CounterVec // model
}

func newAdmissionMetrics() *admissionMetrics {
	return &admissionMetrics{
		shed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "react_wp_solves_shed_total",
			Help: "Requests whose new preference was not solved, answered 429 / RESOURCE_EXHAUSTED, by components entry and reason: queue_full (admission.max_pending_solves), key_rate (admission.key_rate), solve_rate (admission.solve_rate) or solve_share (admission.solve_share).",
		}, []string{"components", "reason"}),
		cancelled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "react_wp_solves_cancelled_total",
			Help: "Solves of new preferences dropped before they ran because every request waiting for them had gone (disconnected, deadline passed).",
		}, []string{"components"}),
		evicted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "react_wp_cache_evictions_total",
			Help: "W_p matrices dropped to keep a components file's cache within cache.max_bytes (and cache.size).",
		}, []string{"components"}),
		gridded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "react_preference_gridded_total",
			Help: "Requests whose preference was moved to admission.preference_grid, by model.",
		}, []string{"model"}),
	}
}

func (a *admissionMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{a.shed, a.cancelled, a.evicted, a.gridded}
}

// Shed implements control.CacheObserver.
func (m *Metrics) Shed(components, reason string) {
	m.adm.shed.WithLabelValues(components, reason).Inc()
}

// Cancelled implements control.CacheObserver.
func (m *Metrics) Cancelled(components string) {
	m.adm.cancelled.WithLabelValues(components).Inc()
}

// Evicted implements control.CacheObserver.
func (m *Metrics) Evicted(components string) {
	m.adm.evicted.WithLabelValues(components).Inc()
}

// WatchCache exports the cache's state at each scrape: its entries, bytes
// per components entry, and the solves pending and running.
func (m *Metrics) WatchCache(stats func() control.CacheStats) {
	m.reg.MustRegister(&cacheCollector{stats: stats})
}

// WatchBudget exports the request bodies held against
// limits.max_inflight_bytes, at each scrape.
func (m *Metrics) WatchBudget(b *limits.Budget) {
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "react_inflight_request_bytes",
			Help: "Bytes of inference request bodies held now, against limits.max_inflight_bytes.",
		}, func() float64 { held, _ := b.Held(); return float64(held) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "react_inflight_request_bytes_limit",
			Help: "limits.max_inflight_bytes in use.",
		}, func() float64 { return float64(b.Limit()) }))
}

// cacheCollector reads a control.CacheStats at each scrape.
type cacheCollector struct {
	stats func() control.CacheStats
}

var (
	cacheEntriesDesc = prometheus.NewDesc("react_wp_cache_entries",
		"W_p matrices held by the caches of per-request preferences, over every components file (the default, the presets and the arms are pinned apart).", nil, nil)
	cacheBytesDesc = prometheus.NewDesc("react_wp_cache_bytes",
		"Bytes of the W_p matrices held by a components file's cache (4·D² per formed W_p, 16·D² while factored), against cache.max_bytes.", []string{"components"}, nil)
	solvesPendingDesc = prometheus.NewDesc("react_wp_solves_pending",
		"Solves of new preferences waiting for a solver (at most admission.max_pending_solves).", nil, nil)
	solvesRunningDesc = prometheus.NewDesc("react_wp_solves_running",
		"Solves of new preferences running (at most admission.max_concurrent_solves).", nil, nil)
	solveTimeDesc = prometheus.NewDesc("react_wp_solve_time_left_seconds",
		"Solver time left for new preferences under admission.solve_share, in seconds (at most its burst); negative while the solves and formations that overdrew it are paid off, when requests that need a solve are shed (reason solve_share). Absent without a share.", nil, nil)
)

func (c *cacheCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- cacheEntriesDesc
	ch <- cacheBytesDesc
	ch <- solvesPendingDesc
	ch <- solvesRunningDesc
	ch <- solveTimeDesc
}

func (c *cacheCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.stats()
	entries := 0
	bytes := map[string]float64{}
	for _, p := range st.Partitions {
		entries += p.Entries
		bytes[p.Name] += float64(p.Bytes)
	}
	ch <- prometheus.MustNewConstMetric(cacheEntriesDesc, prometheus.GaugeValue, float64(entries))
	for name, b := range bytes {
		ch <- prometheus.MustNewConstMetric(cacheBytesDesc, prometheus.GaugeValue, b, name)
	}
	ch <- prometheus.MustNewConstMetric(solvesPendingDesc, prometheus.GaugeValue, float64(st.Pending))
	ch <- prometheus.MustNewConstMetric(solvesRunningDesc, prometheus.GaugeValue, float64(st.Running))
	if st.HasSolveShare {
		ch <- prometheus.MustNewConstMetric(solveTimeDesc, prometheus.GaugeValue, st.SolveTime)
	}
}
