package main

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mergectl/react-triton/react"
)

// testSolver returns a solver over three tasks of D = 6, made from random
// paired features.
func testSolver(t *testing.T) *react.Solver {
	t.Helper()
	const d, n = 6, 40
	rng := rand.New(rand.NewPCG(1, 2))
	c := &react.Components{D: d, Beta: 0.1, Normalization: react.NormSum}
	for _, name := range []string{"t0", "t1", "t2"} {
		mtl, ind := make([]float64, n*d), make([]float64, n*d)
		for i := range mtl {
			mtl[i], ind[i] = rng.NormFloat64(), rng.NormFloat64()
		}
		acc := react.NewAccumulator(d)
		if err := acc.AddFloat64(mtl, ind); err != nil {
			t.Fatal(err)
		}
		stats, err := acc.Stats(name, react.ModelRef{Name: "expert_" + name})
		if err != nil {
			t.Fatal(err)
		}
		c.Tasks = append(c.Tasks, stats)
	}
	s, err := react.NewSolver(c, react.DefaultOptions(c))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSolveLoop: without a rate the loop solves until the end; with a
// rate it solves about rate a second, never more (the first at once);
// with form every solve is formed; the workers' counts add up.
func TestSolveLoop(t *testing.T) {
	s := testSolver(t)
	for _, tc := range []struct {
		name    string
		span    time.Duration
		rate    float64
		form    bool
		workers int
		min     int
		max     int // 0: no bound
	}{
		{"flat out", 50 * time.Millisecond, 0, false, 1, 10, 0},
		{"rate", 300 * time.Millisecond, 20, false, 1, 2, 7},
		{"form", 50 * time.Millisecond, 0, true, 1, 10, 0},
		{"two workers at a rate", 300 * time.Millisecond, 20, false, 2, 2, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := solveLoops(s, time.Now().Add(tc.span), tc.rate, tc.form, tc.workers, 3)
			if err != nil {
				t.Fatal(err)
			}
			if r.solves < tc.min || tc.max > 0 && r.solves > tc.max {
				t.Errorf("%d solves in %v, want %d to %d", r.solves, tc.span, tc.min, tc.max)
			}
			if want := map[bool]int{true: r.solves}[tc.form]; r.formed != want {
				t.Errorf("%d formed of %d solves, want %d", r.formed, r.solves, want)
			}
			if r.factor <= 0 || r.factor > r.took*time.Duration(tc.workers) {
				t.Errorf("factor time %v in a loop of %v", r.factor, r.took)
			}
		})
	}
}
