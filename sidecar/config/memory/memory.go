// Package memory is the sidecar's memory budget for a configuration: the
// most each part of a sidecar serving it may hold (BudgetOf), from which
// docs/deploy.md derives a container's memory limit and GOMEMLIMIT, and
// which the sidecar logs at start-up and at each reload.
package memory

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/mergectl/react-triton/experiment/feedback"
	"github.com/mergectl/react-triton/sidecar/config"
)

// Shape is what the memory budget needs of a components file: its feature
// width D and its number of tasks.
type Shape struct {
	D, Tasks int
}

// RuntimeReserve is the memory the budget keeps for everything it does not
// count itself: the Go runtime, goroutine stacks, the gRPC and HTTP
// servers' buffers, responses, the metrics. Measured at about 60 MB of RSS
// for a sidecar serving the zoo under load.
const RuntimeReserve = 96 * config.MiB

// Budget is the sidecar's memory budget for a configuration: the most each
// part may hold, in bytes.
type Budget struct {
	// Statistics are each components file's per-task statistics as the
	// solver holds them: S_t, G_t, W_orth_t and A_t in float64, 32·D² bytes
	// per task.
	Statistics int64
	// Pinned are the W_p of the default preference, the presets and the
	// experiments' arms, solved at start-up: 4·D² bytes each.
	Pinned int64
	// Cache is cache.max_bytes for each components entry.
	Cache int64
	// Solves are the solves of new preferences at once
	// (admission.max_concurrent_solves), 24·D² each (the factored form and
	// the working copy of C_p), and one formation of W_p, 12·D² and the
	// inverses of its factor's diagonal blocks, 1 KiB·D (128 columns of
	// float64).
	Solves int64
	// Bodies are the request bodies held at once: limits.max_inflight_bytes
	// and the eighth kept for small requests, twice (a body as read, and
	// decompressed or converted from JSON).
	Bodies int64
	// Sampling is what calibrating from live traffic holds when it is
	// enabled (package livestats), at the widest D: per sampled task every
	// row's sums and the held-out rows' (S and G of each, 32·D² bytes),
	// while a file is written their copy (32·D²) and its encoding (32·D²),
	// and the correction whose staleness is measured (8·D²): 104·D² per
	// task.
	Sampling int64
	// Feedback is the experiments' join window when feedback is enabled
	// and an experiment is configured: feedback.EntryBytes for each of
	// feedback.max_entries (a request held, and its id remembered after).
	Feedback int64
	// Runtime is RuntimeReserve.
	Runtime int64
}

// Total is the whole budget.
func (m Budget) Total() int64 {
	return m.Statistics + m.Pinned + m.Cache + m.Solves + m.Bodies + m.Sampling + m.Feedback + m.Runtime
}

// String lists the parts in MiB.
func (m Budget) String() string {
	parts := []struct {
		name string
		v    int64
	}{{"statistics", m.Statistics}, {"pinned", m.Pinned}, {"cache", m.Cache}, {"solves", m.Solves}, {"bodies", m.Bodies}, {"sampling", m.Sampling}, {"feedback", m.Feedback}, {"runtime", m.Runtime}}
	var b strings.Builder
	for _, p := range parts {
		fmt.Fprintf(&b, "%s %.0f MiB, ", p.name, float64(p.v)/float64(config.MiB))
	}
	fmt.Fprintf(&b, "total %.0f MiB", float64(m.Total())/float64(config.MiB))
	return b.String()
}

// BudgetOf returns the memory budget of c, given the shape of each components
// entry's file (by entry name; an entry without a shape counts for nothing
// but its cache). cores is GOMAXPROCS, for the default of
// admission.max_concurrent_solves (half of it); 0 means this process's.
func BudgetOf(c *config.Config, shapes map[string]Shape, cores int) Budget {
	if cores <= 0 {
		cores = runtime.GOMAXPROCS(0)
	}
	solvers := int64(c.Admission.Solvers(cores))
	m := Budget{Runtime: int64(RuntimeReserve), Bodies: 2 * (int64(c.Limits.MaxInflightBytes) + int64(c.Limits.MaxInflightBytes)/8)}
	files := map[string]bool{}
	var widest, widestD int64
	for _, comp := range c.Components {
		m.Cache += int64(c.Cache.MaxBytes)
		s, ok := shapes[comp.Name]
		if !ok {
			continue
		}
		d2 := int64(s.D) * int64(s.D)
		widest, widestD = max(widest, d2), max(widestD, int64(s.D))
		if !files[comp.Path] {
			files[comp.Path] = true
			m.Statistics += 32 * d2 * int64(s.Tasks)
		}
		m.Pinned += 4 * d2 * int64(pinnedCount(c, comp))
	}
	m.Solves = solvers*24*widest + 12*widest + 1024*widestD
	if c.Sampling.Enabled {
		m.Sampling = 104 * widest * int64(len(c.Sampling.Tasks))
	}
	if c.Feedback.Enabled && len(c.Experiments) > 0 {
		// The window fills only with requests served with an arm.
		m.Feedback = feedback.EntryBytes * int64(c.Feedback.MaxEntries)
	}
	return m
}

// pinnedCount is how many W_p a components entry pins, at most: its
// default, its presets, and the arms of the experiments of its models.
func pinnedCount(c *config.Config, comp config.Components) int {
	n := len(comp.Presets)
	if comp.DefaultPreference != "" {
		n++
	}
	models := map[string]bool{}
	for _, m := range c.Models {
		if m.Components == comp.Name {
			models[m.Name] = true
		}
	}
	for _, e := range c.Experiments {
		for _, name := range e.Models {
			if models[name] {
				n += len(e.Arms)
				break
			}
		}
	}
	return n
}
