package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// surfaceMetrics are the metrics of the sidecar's front door: connections,
// refused management calls and the listeners' TLS certificate. Labels come
// from bounded sets: the listener (grpc, http, metrics), the protocol, the
// management call names of config.ManagementCalls, fixed reasons.
type surfaceMetrics struct {
	connections        *prometheus.GaugeVec   // listener
	connectionsRefused *prometheus.CounterVec // listener
	management         *prometheus.CounterVec // protocol, call, reason
	tlsReloads         *prometheus.CounterVec // result
	tlsReloadOK        prometheus.Gauge
	tlsNotAfter        prometheus.Gauge
	readiness          prometheus.Gauge
}

func newSurfaceMetrics() *surfaceMetrics {
	return &surfaceMetrics{
		connections: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "react_connections",
			Help: "Open client connections, by listener (grpc, http).",
		}, []string{"listener"}),
		connectionsRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "react_connections_refused_total",
			Help: "Client connections closed as soon as accepted because the listener had server.max_connections open, by listener.",
		}, []string{"listener"}),
		management: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "react_management_refused_total",
			Help: "Calls of Triton's management API refused by the sidecar, by protocol, call (other: a route of the management families that is no known call) and reason (denied: not in management.allow; unauthenticated: no valid bearer token).",
		}, []string{"protocol", "call", "reason"}),
		tlsReloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "react_tls_reloads_total",
			Help: "Loads of the listeners' TLS certificate, key and client CA after a change or SIGHUP, by result (success, failure).",
		}, []string{"result"}),
		tlsReloadOK: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "react_tls_last_reload_successful",
			Help: "Whether the last load of the listeners' TLS files succeeded (1) or failed, leaving the previous certificate serving (0).",
		}),
		tlsNotAfter: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "react_tls_certificate_not_after_timestamp_seconds",
			Help: "When the listeners' certificate in service expires, in seconds since the epoch (0 without TLS).",
		}),
		readiness: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "react_ready",
			Help: "Whether the sidecar was ready at its last readiness check: its controllable models built and every model they call ready on Triton (1), or not (0).",
		}),
	}
}

func (s *surfaceMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{s.connections, s.connectionsRefused, s.management, s.tlsReloads, s.tlsReloadOK, s.tlsNotAfter, s.readiness}
}

// ManagementRefused counts a refused management call.
func (m *Metrics) ManagementRefused(protocol, call, reason string) {
	m.surface.management.WithLabelValues(protocol, call, reason).Inc()
}

// ConnectionOpened counts a connection a listener accepted.
func (m *Metrics) ConnectionOpened(listener string) {
	m.surface.connections.WithLabelValues(listener).Inc()
}

// ConnectionClosed counts out a connection of a listener that closed.
func (m *Metrics) ConnectionClosed(listener string) {
	m.surface.connections.WithLabelValues(listener).Dec()
}

// ConnectionRefused counts a connection a listener closed as soon as it
// accepted it (server.max_connections).
func (m *Metrics) ConnectionRefused(listener string) {
	m.surface.connectionsRefused.WithLabelValues(listener).Inc()
}

// TLSLoaded records a load of the TLS files: its result, and the
// certificate's expiry when it succeeded.
func (m *Metrics) TLSLoaded(notAfter time.Time, err error) {
	if err != nil {
		m.surface.tlsReloads.WithLabelValues("failure").Inc()
		m.surface.tlsReloadOK.Set(0)
		return
	}
	m.surface.tlsReloads.WithLabelValues("success").Inc()
	m.surface.tlsReloadOK.Set(1)
	m.surface.tlsNotAfter.Set(float64(notAfter.Unix()))
}

// Ready records the outcome of a readiness check.
func (m *Metrics) Ready(ok bool) {
	if ok {
		m.surface.readiness.Set(1)
	} else {
		m.surface.readiness.Set(0)
	}
}
