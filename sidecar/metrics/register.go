package metrics

import "github.com/prometheus/client_golang/prometheus"

// Register registers a collector of another part of the sidecar (live
// sampling's) on the sidecar's registry, served with the others.
func (m *Metrics) Register(c prometheus.Collector) error { return m.reg.Register(c) }
