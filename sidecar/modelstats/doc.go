// Package modelstats counts the sidecar's requests to each controllable
// model the way Triton counts its own models' (ModelStatistics), so that
// clients such as perf_analyzer read them unchanged: Stats for one model,
// Registry to keep them by name across the reloads that rebuild the
// models. It knows nothing of transports or of the models themselves.
package modelstats
