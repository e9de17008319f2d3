package livestats

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/partialfile"
)

// FileSuffix ends the name of every file a sampler writes:
// <replica>.<window start>.live.safetensors (partialfile.LiveName).
const FileSuffix = partialfile.LiveSuffix

// Run is the Run metadata of every live file: what the sums come from.
const Run = "live traffic"

// Window returns the start of the current window.
func (s *Sampler) Window() time.Time { return time.Unix(0, s.window.Load()).UTC() }

// Path returns the file of the current window:
// Dir/<replica>.<window start>.live.safetensors.
func (s *Sampler) Path() string {
	return filepath.Join(s.set.Dir, partialfile.LiveName(s.set.Replica, s.Window()))
}

// snapshot returns a partial-statistics file of the tasks that have rows,
// their sums copied under each task's lock in turn.
func (s *Sampler) snapshot() (*partialfile.File, error) {
	f := &partialfile.File{D: s.d, Beta: s.set.Beta, Normalization: react.Normalization(s.set.Normalization),
		Backbone: s.set.Backbone, Run: Run, Replica: s.set.Replica, Window: s.Window()}
	for _, t := range s.order {
		all, held, err := t.copySums(s.d)
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", t.name, err)
		}
		if all.N() == 0 {
			continue
		}
		f.Tasks = append(f.Tasks, &partialfile.Task{Name: t.name, Expert: t.expert, Acc: all, Held: held, Done: all.N(), Total: all.N()})
	}
	return f, nil
}

// copySums returns copies of t's sums, under its lock: O(D²).
func (t *task) copySums(d int) (all, held *react.Accumulator, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if all, err = copyAcc(t.all, d); err != nil {
		return nil, nil, err
	}
	if held, err = copyAcc(t.held, d); err != nil {
		return nil, nil, err
	}
	return all, held, nil
}

func copyAcc(a *react.Accumulator, d int) (*react.Accumulator, error) {
	n, s, g := a.State()
	yy, _ := a.SumSquares() // always known: the sampler's sums start empty
	return react.RestoreAccumulatorSquares(d, n, s, g, yy)
}

// Checkpoint writes the current window's sums to path atomically (a
// temporary file, fsync, rename), in the partial-statistics format
// (package react/partialfile): per task with rows, every row's sums and
// the held-out rows' sums, with the replica and the window's start. It
// writes nothing when no task has rows yet. Adds go on while it copies
// each task's sums in turn, so a checkpoint holds each task's sums at one
// moment, not every task's at the same one.
func (s *Sampler) Checkpoint(path string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.checkpoint(path)
}

func (s *Sampler) checkpoint(path string) error {
	f, err := s.snapshot()
	if err == nil && len(f.Tasks) > 0 {
		err = partialfile.Save(path, f)
	}
	if err != nil {
		s.results[1].Add(1)
		return fmt.Errorf("livestats: checkpoint: %w", err)
	}
	if len(f.Tasks) > 0 {
		s.results[0].Add(1)
		s.written.Store(s.now().Unix())
	}
	return nil
}

// Flush writes the current window's sums to the window's file (Path), as
// Checkpoint: what Run does on each tick and at the end, and what a caller
// that drives the schedule itself calls.
func (s *Sampler) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.checkpoint(s.Path())
}

// Rotate ends the current window: it writes its file (Path) a last time
// and starts a new window, with empty sums and a new file, from now. Rows
// added meanwhile go to the new window, so no row is in two files. If the
// file cannot be written the window goes on, with every row it had.
func (s *Sampler) Rotate() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Take each task's sums, leaving empty ones, then write them.
	old := make([][2]*react.Accumulator, len(s.order))
	start := s.window.Load()
	for i, t := range s.order {
		t.mu.Lock()
		old[i] = [2]*react.Accumulator{t.all, t.held}
		t.all, t.held = react.NewAccumulator(s.d), react.NewAccumulator(s.d)
		t.mu.Unlock()
	}
	s.window.Store(s.now().UnixNano())
	f := &partialfile.File{D: s.d, Beta: s.set.Beta, Normalization: react.Normalization(s.set.Normalization),
		Backbone: s.set.Backbone, Run: Run, Replica: s.set.Replica, Window: time.Unix(0, start).UTC()}
	for i, t := range s.order {
		if n := old[i][0].N(); n > 0 {
			f.Tasks = append(f.Tasks, &partialfile.Task{Name: t.name, Expert: t.expert, Acc: old[i][0], Held: old[i][1], Done: n, Total: n})
		}
	}
	path := filepath.Join(s.set.Dir, partialfile.LiveName(s.set.Replica, f.Window))
	if len(f.Tasks) == 0 {
		return nil
	}
	if err := partialfile.Save(path, f); err != nil {
		// Put the window back, with the rows added since.
		s.window.Store(start)
		for i, t := range s.order {
			t.mu.Lock()
			old[i][0].Merge(t.all)
			old[i][1].Merge(t.held)
			t.all, t.held = old[i][0], old[i][1]
			t.mu.Unlock()
		}
		s.results[1].Add(1)
		return fmt.Errorf("livestats: rotate: %w", err)
	}
	s.results[0].Add(1)
	s.written.Store(s.now().Unix())
	return nil
}

// Run writes the current window's file every Settings.Interval, starts a
// new window every Settings.Window (Rotate), and writes the file a last
// time when ctx is done, returning that write's error. Each failed write
// on the way is passed to report (nil: ignored), and counted
// (MetricCheckpoints); the next tick tries again.
func (s *Sampler) Run(ctx context.Context, report func(error)) error {
	tick := time.NewTicker(s.set.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return s.Flush()
		case <-tick.C:
			var err error
			if s.now().Sub(s.Window()) >= s.set.Window {
				err = s.Rotate()
			} else {
				err = s.Flush()
			}
			if err != nil && report != nil {
				report(err)
			}
		}
	}
}
