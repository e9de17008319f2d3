package config

import (
	"math"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/problem"
)

// MaxPreferenceGrid is the finest admission.preference_grid: the rounding
// of every preference's canonical form already keeps six decimals.
const MaxPreferenceGrid = 1_000_000

func (c *Config) validateAdmission(p *problem.List) {
	a := &c.Admission
	if a.MaxPendingSolves < 0 {
		p.Add("admission.max_pending_solves", "must be 0 (no queue) or positive, got %d", a.MaxPendingSolves)
	}
	if a.MaxConcurrentSolves < 0 {
		p.Add("admission.max_concurrent_solves", "must be 0 (half the cores) or positive, got %d", a.MaxConcurrentSolves)
	}
	if a.RetryAfter <= 0 {
		p.Add("admission.retry_after", "must be positive, got %v", a.RetryAfter)
	}
	if a.KeyHeader != "" {
		if msg := control.CheckKeyHeader(a.KeyHeader); msg != "" {
			p.Add("admission.key_header", "%s", msg)
		}
	}
	if a.KeyRate < 0 || math.IsNaN(a.KeyRate) || math.IsInf(a.KeyRate, 0) {
		p.Add("admission.key_rate", "must be 0 (no bound) or a positive number of new preferences per second, got %v", a.KeyRate)
	}
	if a.KeyBurst < 1 {
		p.Add("admission.key_burst", "must be at least 1, got %d", a.KeyBurst)
	}
	if a.SolveRate < 0 || math.IsNaN(a.SolveRate) || math.IsInf(a.SolveRate, 0) {
		p.Add("admission.solve_rate", "must be 0 (no bound) or a positive number of new preferences per second, got %v", a.SolveRate)
	}
	if a.ShedDelay < 0 {
		p.Add("admission.shed_delay", "must be 0 (answer at once) or positive, got %v", a.ShedDelay)
	}
	if a.SolveBurst < 0 {
		p.Add("admission.solve_burst", "must be 0 (one second of solve_rate) or positive, got %d", a.SolveBurst)
	}
	if !(a.SolveShare >= 0 && a.SolveShare <= 1) {
		p.Add("admission.solve_share", "must be from 0 (no bound) to 1 (all of the solvers' time), got %v", a.SolveShare)
	}
	if a.SolveShareBurst < 0 {
		p.Add("admission.solve_share_burst", "must be 0 (one second of solve_share) or positive, got %v", a.SolveShareBurst)
	}
	if a.PreferenceGrid < 0 || a.PreferenceGrid > MaxPreferenceGrid {
		p.Add("admission.preference_grid", "must be 0 (off) or from 1 to %d, got %d", MaxPreferenceGrid, a.PreferenceGrid)
	}
}
