package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/componentsfile"
)

// solves runs the sidecar's solve code for new preferences in a process
// of its own, with no request handling: one solve at a time, at most
// -rate a second, every thread at -nice.
func solves(args []string) error {
	fs := flag.NewFlagSet("solves", flag.ContinueOnError)
	path := fs.String("components", "", "components file")
	dur := fs.Duration("duration", 20*time.Second, "how long, from the start of the process (loading included)")
	rate := fs.Float64("rate", 20, "solves a second at most; 0 for as fast as they go")
	nice := fs.Int("nice", 10, "nice level of every thread")
	form := fs.Bool("form", false, "form W_p after each factorisation, as the sidecar does when no other solve waits")
	workers := fs.Int("workers", 1, "solves at a time")
	seed := fs.Uint64("seed", 5, "random seed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *path == "" {
		return fmt.Errorf("solves: no -components")
	}
	if *workers < 1 {
		return fmt.Errorf("solves: -workers %d: want at least 1", *workers)
	}
	if *rate < 0 {
		return fmt.Errorf("solves: -rate %g: want at least 0", *rate)
	}
	start := time.Now()
	end := start.Add(*dur)
	if err := setNice(*nice); err != nil {
		return fmt.Errorf("solves: %w", err)
	}
	// The sidecar's linear algebra (its default linalg section) and its
	// solver over the components, with the options they were made with.
	backend, err := react.UseBackend(react.BackendAuto)
	if err != nil {
		return fmt.Errorf("solves: %w", err)
	}
	react.SetBackendThreads(1)
	c, err := componentsfile.Load(*path)
	if err != nil {
		return fmt.Errorf("solves: %w", err)
	}
	solver, err := react.NewSolver(c, react.DefaultOptions(c))
	if err != nil {
		return fmt.Errorf("solves: %w", err)
	}
	loaded := time.Since(start)
	loop, err := solveLoops(solver, end, *rate, *form, *workers, *seed)
	if err != nil {
		return fmt.Errorf("solves: %w", err)
	}
	levels, err := niceLevels()
	if err != nil {
		return fmt.Errorf("solves: %w", err)
	}
	return emit(map[string]any{"mode": "solves", "requests": 0, "solves": loop.solves, "formed": loop.formed,
		"solves_per_s": float64(loop.solves) / loop.took.Seconds(), "factor_ms": ms(loop.factor) / float64(max(1, loop.solves)),
		"form_ms": ms(loop.form) / float64(max(1, loop.formed)), "load_s": loaded.Seconds(), "rate": *rate, "workers": *workers,
		"nice": *nice, "thread_nice": levels, "backend": backend, "d": solver.D(), "tasks": len(solver.Tasks()),
		"duration_s": dur.Seconds()})
}

// loopResult is what solveLoop did: solves (factorisations) and
// formations, the time each took in all, and the loop's own time.
type loopResult struct {
	solves, formed     int
	factor, form, took time.Duration
}

// add adds another worker's counts and times; took is the longest.
func (r *loopResult) add(o loopResult) {
	r.solves += o.solves
	r.formed += o.formed
	r.factor += o.factor
	r.form += o.form
	r.took = max(r.took, o.took)
}

// solveLoops runs solveLoop on workers goroutines at once, each at
// rate/workers a second and with a random source of its own, and adds up
// what they did; the first error wins.
func solveLoops(solver *react.Solver, end time.Time, rate float64, form bool, workers int, seed uint64) (loopResult, error) {
	var (
		mu    sync.Mutex
		total loopResult
		first error
		wg    sync.WaitGroup
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := solveLoop(solver, end, rate/float64(workers), form, rand.New(rand.NewPCG(seed, uint64(w)+11)))
			mu.Lock()
			defer mu.Unlock()
			total.add(r)
			if first == nil {
				first = err
			}
		}()
	}
	wg.Wait()
	return total, first
}

// solveLoop factorises a new random preference over the solver's tasks,
// and forms its W_p as a float32 matrix when form is set, one after the
// other at most rate a second (0: without a pause) until end. The
// preferences are written as bench/abuse flood writes them.
func solveLoop(solver *react.Solver, end time.Time, rate float64, form bool, r *rand.Rand) (loopResult, error) {
	var out loopResult
	tasks := solver.Tasks()
	weights := make([]string, len(tasks))
	start := time.Now()
	next := start
	for {
		if rate > 0 {
			time.Sleep(time.Until(next))
			// A loop that falls behind does not catch up in a burst.
			next = maxTime(next, time.Now()).Add(time.Duration(float64(time.Second) / rate))
		}
		if !time.Now().Before(end) {
			break
		}
		for t, task := range tasks {
			weights[t] = fmt.Sprintf("%s=%.3f", task, 0.001+r.Float64())
		}
		p, err := react.ParsePreference(strings.Join(weights, ","), tasks)
		if err != nil {
			return out, err
		}
		t0 := time.Now()
		f, err := solver.Factor(p)
		if err != nil {
			return out, err
		}
		out.factor += time.Since(t0)
		out.solves++
		if form {
			t0 = time.Now()
			if _, err := react.Float32Matrix(f.Form()); err != nil {
				return out, err
			}
			out.form += time.Since(t0)
			out.formed++
		}
	}
	out.took = time.Since(start)
	return out, nil
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func ms(d time.Duration) float64 { return d.Seconds() * 1000 }
