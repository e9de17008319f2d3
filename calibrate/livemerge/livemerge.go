// Package livemerge adds the statistics files the sidecar's replicas
// write from live traffic (package livestats) into a components file:
// calibrate merge's library for live files. The sums of every replica and
// window are added exactly, in float64; a task with too few samples keeps
// the statistics of a base components file (or is left out); β and the
// normalisation may be chosen without labels from the held-out sums, as
// calibrate fit --beta auto does.
package livemerge

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/mergectl/react-triton/problem"
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/heldout"
	"github.com/mergectl/react-triton/react/partialfile"
)

// File is a live file and the path it was read from.
type File struct {
	Path string
	*partialfile.File
}

// Load reads the live files at paths and returns them, or every problem at
// once: files that do not load, and files that are not live files (a
// shard or checkpoint of calibrate fit).
func Load(paths []string) ([]File, error) {
	var l problem.List
	var out []File
	for _, p := range paths {
		f, err := partialfile.Load(p)
		switch {
		case err != nil:
			l.Add(p, "%v", err)
		case f.Replica == "":
			l.Add(p, "not a live file (a shard or checkpoint of calibrate fit, run %q): merge a fit's shards apart from live files", f.Run)
		default:
			out = append(out, File{Path: p, File: f})
		}
	}
	if err := l.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// Options say how Merge builds the components.
type Options struct {
	// Base, when not nil, is the components file in service: a task with
	// fewer than MinSamples live samples keeps its statistics from it, and
	// its tasks that no live file has are kept as they are.
	Base *react.Components
	// MinSamples is the fewest live samples a task's live statistics need.
	// 0 takes every task that has any.
	MinSamples int64
	// BetaAuto chooses β and the normalisation by the held-out
	// reconstruction error of the live tasks (heldout.Select over
	// heldout.BetaGrid); otherwise the files' are kept.
	BetaAuto bool
}

// Source says where a task's statistics come from.
type Source string

// The sources of a task's statistics.
const (
	Live    Source = "live"     // the live files
	Base    Source = "base"     // the base file (too few live samples, or none)
	LeftOut Source = "left out" // too few live samples and no base to keep
)

// Task is what Merge did with one task.
type Task struct {
	Name   string
	Source Source
	// Live and Held are the task's live samples and, of them, those held
	// out; Files how many live files had the task.
	Live, Held int64
	Files      int
}

// Result is the merged components and how they were made.
type Result struct {
	Components *react.Components
	Tasks      []Task
	// Candidates and Chosen are the β selection's, with BetaAuto.
	Candidates []heldout.Candidate
	Chosen     int
}

// sums are one task's sums over the live files.
type sums struct {
	name       string
	expert     react.ModelRef
	from       string // the first file with the task
	all, held  *react.Accumulator
	files      int
	start, end time.Time // the windows' earliest start, latest start
}

// Merge adds the live files' sums task by task and builds the components:
// every problem with the files is reported at once (a D, backbone, β or
// normalisation differing from the first file's; the same replica's window
// twice; a task's expert differing between files; a base of another D or
// backbone). The files are added in the order of their replica and window
// whatever the order given, so the result does not depend on it.
func Merge(files []File, opt Options) (*Result, error) {
	if len(files) == 0 {
		return nil, fmt.Errorf("merge: no live files")
	}
	files = slices.Clone(files)
	slices.SortStableFunc(files, func(a, b File) int {
		return cmp.Or(cmp.Compare(a.Replica, b.Replica), a.Window.Compare(b.Window))
	})
	first := files[0]
	var l problem.List
	seen := map[string]string{}
	var tasks []*sums
	byName := map[string]*sums{}
	for _, f := range files {
		switch {
		case f.D != first.D:
			l.Add(f.Path, "D=%d, but %s has D=%d", f.D, first.Path, first.D)
			continue
		case f.Backbone != first.Backbone:
			l.Add(f.Path, "backbone %s, but %s has %s", describe(f.Backbone), first.Path, describe(first.Backbone))
		case f.Beta != first.Beta || f.Normalization != first.Normalization:
			l.Add(f.Path, "β %g and normalisation %s, but %s has %g and %s: the replicas' sampling settings differ",
				f.Beta, f.Normalization, first.Path, first.Beta, first.Normalization)
		}
		key := f.Replica + "\x00" + f.Window.String()
		if other, dup := seen[key]; dup {
			l.Add(f.Path, "replica %s's window from %s, as %s: the same file twice?", f.Replica, f.Window.Format(time.RFC3339), other)
			continue
		}
		seen[key] = f.Path
		for _, t := range f.Tasks {
			s, ok := byName[t.Name]
			if !ok {
				s = &sums{name: t.Name, expert: t.Expert, from: f.Path, all: react.NewAccumulator(first.D), held: react.NewAccumulator(first.D), start: f.Window, end: f.Window}
				byName[t.Name] = s
				tasks = append(tasks, s)
			}
			if t.Expert != s.expert {
				l.Add(f.Path, "task %s: expert %s, but %s has %s", t.Name, describe(t.Expert), s.from, describe(s.expert))
				continue
			}
			if err := s.all.Merge(t.Acc); err != nil {
				l.Add(f.Path, "task %s: %v", t.Name, err)
				continue
			}
			if t.Held != nil {
				if err := s.held.Merge(t.Held); err != nil {
					l.Add(f.Path, "task %s: %v", t.Name, err)
				}
			}
			s.files++
			s.start, s.end = minTime(s.start, f.Window), maxTime(s.end, f.Window)
		}
	}
	if b := opt.Base; b != nil {
		if b.D != first.D {
			l.Add("--base", "D=%d, but the live files have D=%d", b.D, first.D)
		}
		if b.Backbone != first.Backbone {
			l.Add("--base", "backbone %s, but the live files have %s", describe(b.Backbone), describe(first.Backbone))
		}
	}
	if err := l.Err(); err != nil {
		return nil, err
	}
	return build(first.File, tasks, opt)
}

// build chooses each task's statistics and the options, and returns the
// components.
func build(first *partialfile.File, tasks []*sums, opt Options) (*Result, error) {
	res := &Result{Components: &react.Components{D: first.D, Beta: first.Beta, Normalization: first.Normalization, Backbone: first.Backbone}}
	c := res.Components
	live := map[string]*sums{}
	for _, s := range tasks {
		if s.all.N() > 0 && s.all.N() >= opt.MinSamples {
			live[s.name] = s
		}
	}
	report := map[string]Task{}
	for _, s := range tasks {
		report[s.name] = Task{Name: s.name, Source: LeftOut, Live: s.all.N(), Held: s.held.N(), Files: s.files}
	}
	add := func(name string, st *react.TaskStats, src Source) {
		c.Tasks = append(c.Tasks, st)
		r := report[name]
		r.Name, r.Source = name, src
		report[name] = r
	}
	// The base's tasks first, in its order, then the new ones.
	var order []string
	if opt.Base != nil {
		order = opt.Base.TaskNames()
	}
	for _, s := range tasks {
		if !slices.Contains(order, s.name) {
			order = append(order, s.name)
		}
	}
	var fitTasks []*react.TaskStats
	var held []heldout.Task
	for _, name := range order {
		if s, ok := live[name]; ok {
			st, err := s.all.Stats(name, s.expert)
			if err != nil {
				return nil, fmt.Errorf("merge: %w", err)
			}
			st.Provenance = map[string]string{
				"live.files": strconv.Itoa(s.files), "live.held_out": strconv.FormatInt(s.held.N(), 10),
				"live.first_window": s.start.UTC().Format(time.RFC3339), "live.last_window": s.end.UTC().Format(time.RFC3339),
			}
			add(name, st, Live)
			if opt.BetaAuto && s.held.N() > 0 && s.held.N() < s.all.N() {
				fs, hs, err := split(s)
				if err != nil {
					return nil, fmt.Errorf("merge: task %s: %w", name, err)
				}
				fitTasks = append(fitTasks, fs)
				held = append(held, heldout.Task{Stats: hs, YY: hs.SumSquares})
			}
			continue
		}
		if opt.Base != nil {
			if st, ok := opt.Base.Task(name); ok {
				add(name, st, Base)
			}
		}
	}
	for _, name := range order {
		if r, ok := report[name]; ok {
			res.Tasks = append(res.Tasks, r)
		} else {
			res.Tasks = append(res.Tasks, Task{Name: name, Source: Base})
		}
	}
	if len(c.Tasks) == 0 {
		return nil, fmt.Errorf("merge: no task has %d live samples, and there is no --base to keep tasks from", opt.MinSamples)
	}
	if opt.BetaAuto {
		if len(fitTasks) == 0 {
			return nil, fmt.Errorf("merge: --beta auto: no live task has held-out samples (sampling.holdout is 0, or too few samples)")
		}
		fit := &react.Components{D: c.D, Normalization: react.NormSum, Backbone: c.Backbone, Tasks: fitTasks}
		cands, best, err := heldout.Select(fit, held, heldout.BetaGrid([]react.Normalization{react.NormSum, react.NormMean}))
		if err != nil {
			return nil, fmt.Errorf("merge: --beta auto: %w", err)
		}
		res.Candidates, res.Chosen = cands, best
		c.Beta, c.Normalization = cands[best].Beta, cands[best].Normalization
	}
	return res, nil
}

// split returns a task's statistics over its rows not held out (every
// row's sums less the held-out ones) and over the held-out rows.
func split(s *sums) (fit, held *react.TaskStats, err error) {
	n, S, G := s.all.State()
	hn, hS, hG := s.held.State()
	yy, ok := s.all.SumSquares()
	hyy, hok := s.held.SumSquares()
	if !ok || !hok {
		return nil, nil, fmt.Errorf("the sums of squares are not recorded")
	}
	fS, fG := make([]float64, len(S)), make([]float64, len(G))
	for i := range S {
		fS[i] = S[i] - hS[i]
	}
	for i := range G {
		fG[i] = G[i] - hG[i]
	}
	rest, err := react.RestoreAccumulatorSquares(s.all.D(), n-hn, fS, fG, max(yy-hyy, 0))
	if err != nil {
		return nil, nil, err
	}
	if fit, err = rest.Stats(s.name, s.expert); err != nil {
		return nil, nil, err
	}
	if held, err = s.held.Stats(s.name, s.expert); err != nil {
		return nil, nil, err
	}
	return fit, held, nil
}

func describe(m react.ModelRef) string {
	return fmt.Sprintf("%q version %q output %q", m.Name, m.Version, m.Output)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
