package memory_test

import (
	"testing"

	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/config/memory"
)

// TestBudgetOf adds up the parts by hand for a configuration of two
// components entries over one file, with a preset, a default and a
// two-arm experiment.
func TestBudgetOf(t *testing.T) {
	c := config.Default()
	c.Limits.MaxInflightBytes = 64 * config.MiB
	c.Cache.MaxBytes = 100 * config.MiB
	c.Admission.MaxConcurrentSolves = 0
	c.Components = []config.Components{
		{Name: "a", Path: "/m/c.safetensors", DefaultPreference: "x=1", Presets: map[string]string{"p": "y=1"}},
		{Name: "b", Path: "/m/c.safetensors"},
	}
	c.Models = []config.Model{{Name: "m", Components: "a"}, {Name: "n", Components: "b"}}
	c.Experiments = []config.Experiment{{Name: "e", Models: []string{"m"}, Arms: []config.Arm{{Name: "1"}, {Name: "2"}}}}
	const d = 1000
	got := memory.BudgetOf(c, map[string]memory.Shape{"a": {D: d, Tasks: 5}, "b": {D: d, Tasks: 5}}, 8)
	want := memory.Budget{
		Statistics: 32 * d * d * 5,             // one file
		Pinned:     4 * d * d * (1 + 1 + 2),    // a: default, preset, two arms; b: none
		Cache:      2 * 100 << 20,              // one per entry
		Solves:     4*24*d*d + 12*d*d + 1024*d, // half of 8 cores, and one formation
		Bodies:     2 * (64<<20 + 64<<20/8),    // as read and converted, with the eighth
		Feedback:   400 * 100_000,              // the default window: an experiment is configured
		Runtime:    int64(memory.RuntimeReserve),
	}
	if got != want {
		t.Errorf("BudgetOf\n got %+v\nwant %+v", got, want)
	}
	if got.Total() != want.Statistics+want.Pinned+want.Cache+want.Solves+want.Bodies+want.Feedback+want.Runtime {
		t.Errorf("Total %d", got.Total())
	}
	c.Admission.MaxConcurrentSolves = 2
	if s := memory.BudgetOf(c, map[string]memory.Shape{"a": {D: d, Tasks: 5}}, 8).Solves; s != 2*24*d*d+12*d*d+1024*d {
		t.Errorf("Solves with max_concurrent_solves 2: %d", s)
	}
	// Sampling: nothing while off, 104·D² per sampled task when on.
	c.Sampling.Tasks = []config.SampledTask{{Name: "x"}, {Name: "y"}, {Name: "z"}}
	if s := memory.BudgetOf(c, map[string]memory.Shape{"a": {D: d, Tasks: 5}}, 8).Sampling; s != 0 {
		t.Errorf("Sampling while off: %d", s)
	}
	c.Sampling.Enabled = true
	m := memory.BudgetOf(c, map[string]memory.Shape{"a": {D: d, Tasks: 5}}, 8)
	if m.Sampling != 3*(32+32+32+8)*d*d || m.Total() != m.Statistics+m.Pinned+m.Cache+m.Solves+m.Bodies+m.Sampling+m.Feedback+m.Runtime {
		t.Errorf("Sampling of 3 tasks: %d (total %d)", m.Sampling, m.Total())
	}
	// Feedback: the window's bound while an experiment may fill it;
	// nothing with feedback off, or without experiments.
	c.Feedback.MaxEntries = 5000
	if f := memory.BudgetOf(c, nil, 8).Feedback; f != 400*5000 {
		t.Errorf("Feedback of 5000 entries: %d", f)
	}
	c.Feedback.Enabled = false
	if f := memory.BudgetOf(c, nil, 8).Feedback; f != 0 {
		t.Errorf("Feedback while off: %d", f)
	}
	c.Feedback.Enabled, c.Experiments = true, nil
	if f := memory.BudgetOf(c, nil, 8).Feedback; f != 0 {
		t.Errorf("Feedback without experiments: %d", f)
	}
}
