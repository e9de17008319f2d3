package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The calibration windows' neighbours: processes that share the machine
// with the sidecar and Triton, and touch neither.

// spin burns one core at a low priority.
func spin(args []string) error {
	fs := flag.NewFlagSet("spin", flag.ContinueOnError)
	dur := fs.Duration("duration", 20*time.Second, "how long")
	nice := fs.Int("nice", 19, "nice level")
	if err := fs.Parse(args); err != nil {
		return err
	}
	runtime.LockOSThread()
	syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), *nice)
	end := time.Now().Add(*dur)
	n := 0
	for time.Now().Before(end) {
		for i := 0; i < 1<<16; i++ {
			n += i
		}
	}
	return emit(map[string]any{"mode": "spin", "requests": 0, "nice": *nice, "duration_s": dur.Seconds(), "sum": n})
}

// membw streams over a buffer larger than the last-level cache at a low
// priority, on one core: each pass reads every element and writes one in
// writeStride, so that the neighbour evicts what the others keep in the
// cache, as a memory-bound job does.
func membw(args []string) error {
	fs := flag.NewFlagSet("membw", flag.ContinueOnError)
	dur := fs.Duration("duration", 20*time.Second, "how long")
	nice := fs.Int("nice", 19, "nice level")
	mib := fs.Int("mib", 64, "buffer size in MiB")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *mib < 1 {
		return fmt.Errorf("membw: -mib %d: want at least 1", *mib)
	}
	runtime.LockOSThread()
	syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), *nice)
	buf := make([]float64, *mib<<20/8)
	for i := range buf {
		buf[i] = float64(i % 1024)
	}
	start := time.Now()
	end := start.Add(*dur)
	passes, sum := 0, 0.0
	for time.Now().Before(end) {
		sum += streamPass(buf)
		passes++
	}
	took := time.Since(start).Seconds()
	return emit(map[string]any{"mode": "membw", "requests": 0, "nice": *nice, "duration_s": dur.Seconds(),
		"buffer_mib": *mib, "passes": passes, "read_gb_s": float64(passes) * float64(len(buf)*8) / took / 1e9, "sum": sum})
}

// writeStride is how many elements membw's pass reads per element it
// writes: one write per 8 cache lines of 64 bytes.
const writeStride = 64

// streamPass sums buf, four accumulators wide, and adds a little to one
// element in writeStride; it returns the sum.
func streamPass(buf []float64) float64 {
	var s0, s1, s2, s3 float64
	n := len(buf) &^ 3
	for i := 0; i < n; i += 4 {
		s0 += buf[i]
		s1 += buf[i+1]
		s2 += buf[i+2]
		s3 += buf[i+3]
	}
	for i := n; i < len(buf); i++ {
		s0 += buf[i]
	}
	for i := 0; i < len(buf); i += writeStride {
		buf[i] += 1e-9
	}
	return s0 + s1 + s2 + s3
}

// setNice sets the nice level of every thread of this process. A thread
// the runtime starts later inherits the level of the thread that starts
// it, so one sweep that finds no thread left at another level covers the
// process for good; it sweeps until then (at most a few times).
func setNice(nice int) error {
	for sweep := 0; sweep < 5; sweep++ {
		tids, err := threads()
		if err != nil {
			return err
		}
		changed := false
		for _, tid := range tids {
			prio, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
			if err != nil {
				continue // the thread has gone
			}
			if 20-prio != nice { // Getpriority returns 20 - nice
				changed = true
				if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice); err != nil {
					return fmt.Errorf("nice %d for thread %d: %w", nice, tid, err)
				}
			}
		}
		if !changed {
			return nil
		}
	}
	return fmt.Errorf("nice %d: threads kept appearing at another level", nice)
}

// niceLevels returns the nice levels of this process's threads, lowest
// first, each once.
func niceLevels() ([]int, error) {
	tids, err := threads()
	if err != nil {
		return nil, err
	}
	seen := map[int]bool{}
	var out []int
	for _, tid := range tids {
		prio, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
		if err != nil {
			continue
		}
		if n := 20 - prio; !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out, nil
}

// threads returns the ids of this process's threads.
func threads() ([]int, error) {
	entries, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, fmt.Errorf("threads: %w", err)
	}
	tids := make([]int, 0, len(entries))
	for _, e := range entries {
		if tid, err := strconv.Atoi(strings.TrimSpace(e.Name())); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}
