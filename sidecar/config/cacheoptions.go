package config

import (
	"runtime"

	"github.com/mergectl/react-triton/control"
)

// Solvers is how many solves of new preferences run at once with cores
// cores (GOMAXPROCS): admission.max_concurrent_solves, or half the cores
// when it is 0, at least one.
func (a *Admission) Solvers(cores int) int {
	if a.MaxConcurrentSolves > 0 {
		return a.MaxConcurrentSolves
	}
	return max(1, cores/2)
}

// CacheOptions are the W_p cache's budgets (cache) and admission
// (admission) of c, in this process (GOMAXPROCS), with obs told about the
// cache's work (nil: the one in use, on a reload).
func (c *Config) CacheOptions(obs control.CacheObserver) control.CacheOptions {
	return control.CacheOptions{
		MaxBytes:            int64(c.Cache.MaxBytes),
		MaxEntries:          c.Cache.Size,
		MaxConcurrentSolves: c.Admission.Solvers(runtime.GOMAXPROCS(0)),
		MaxPendingSolves:    c.Admission.MaxPendingSolves,
		KeyRate:             c.Admission.KeyRate,
		KeyBurst:            c.Admission.KeyBurst,
		SolveRate:           c.Admission.SolveRate,
		SolveBurst:          c.Admission.SolveBurst,
		SolveShare:          c.Admission.SolveShare,
		SolveShareBurst:     c.Admission.SolveShareBurst,
		RetryAfter:          c.Admission.RetryAfter,
		ShedDelay:           min(c.Admission.ShedDelay, c.Admission.RetryAfter),
		Observer:            obs,
	}
}
