package fit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/mergectl/react-triton/calibrate/pairs"
	"github.com/mergectl/react-triton/calibrate/tritonpairs"
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/partialfile"
)

// fitTask accumulates one task's sums, from its checkpoint with --resume,
// saving a checkpoint every checkpoint.every chunks, when the task ends,
// when ctx ends (SIGINT, SIGTERM) and when a chunk fails.
func (r *fitRun) fitTask(ctx context.Context, src pairs.Source) (*partialfile.Task, taskSummary, error) {
	task, d := src.Task(), src.Dim()
	available := int(src.Len())
	idx := pairs.Select(available, r.subset(), r.shard)
	total := int64(available)
	if idx != nil {
		total = int64(len(idx))
	}
	if total == 0 {
		return nil, taskSummary{}, fmt.Errorf("task %s: shard %s of its %d samples is empty", task, r.cfg.Shard, available)
	}
	run := r.describe(src, idx)
	t := &partialfile.Task{Name: task, Total: total, Provenance: pairs.SubsetProvenance(r.subset(), available, int(total))}
	tp, _ := src.(*tritonpairs.Pair)

	if r.resume {
		f, err := partialfile.Load(r.ckptPath(task))
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return nil, taskSummary{}, fmt.Errorf("resuming: %w", err)
		case f.Run != run:
			return nil, taskSummary{}, fmt.Errorf("resuming: checkpoint %s is of another run:\n  it has: %s\n  this run: %s\ndelete it to start the task over", r.ckptPath(task), f.Run, run)
		default:
			ct := f.Tasks[0]
			t.Acc, t.Done = ct.Acc, ct.Done
			if tp != nil {
				tp.PinVersions(f.Backbone.Version, ct.Expert.Version)
			}
		}
	}
	if t.Acc == nil {
		t.Acc = react.NewAccumulator(d)
	}
	var s pairs.Source = src
	if tp != nil {
		tp.Use(idx, int(t.Done))
	} else {
		s = pairs.NewSelected(src, idx, int(t.Done))
	}
	save := func() error {
		t.Expert = r.expertOf(src)
		return partialfile.Save(r.ckptPath(task), &partialfile.File{
			D: d, Beta: r.cfg.Beta, Normalization: r.norm, Backbone: r.backboneOf(src), Run: run, Tasks: []*partialfile.Task{t},
		})
	}
	// kept says where the sums so far are, after a failure.
	kept := func() string {
		if err := r.mkdirSave(save); err != nil {
			return fmt.Sprintf(" (and the checkpoint could not be saved: %v)", err)
		}
		return fmt.Sprintf("; the %d samples before are saved in %s: fix the cause and run the same command with --resume", t.Done, r.ckptPath(task))
	}

	// skipped counts the image files the models refused, left out with
	// images.on_error: skip: each is a sample done, not in the sums.
	skipped := 0
	takeSkipped := func() {
		if tp == nil {
			return
		}
		for _, s := range tp.TakeSkipped() {
			fmt.Fprintf(r.stderr, "calibrate: task %s: skipped %s: %v\n", task, filepath.Join(r.cfg.Inputs, task, filepath.FromSlash(s.File)), s.Err)
			t.Done++
			skipped++
			r.report.Add(1)
		}
	}

	began, resumed := time.Now(), t.Done
	r.report.Start(task, t.Done, total)
	chunk := r.chunkRows(src)
	mtl, ind := make([]float64, chunk*d), make([]float64, chunk*d)
	for chunks := 1; t.Done < total; chunks++ {
		if ctx.Err() != nil {
			return nil, taskSummary{}, fmt.Errorf("interrupted at sample %d of %d of task %s%s", t.Done, total, task, kept())
		}
		n, err := s.Next(mtl, ind)
		takeSkipped()
		if n > 0 {
			if err := t.Acc.AddFloat64(mtl[:n*d], ind[:n*d]); err != nil {
				return nil, taskSummary{}, fmt.Errorf("task %s: samples %d to %d (%s): %w%s", task, t.Done, t.Done+int64(n), models(src), err, kept())
			}
			t.Done += int64(n)
			r.report.Add(n)
			if chunks%r.cfg.Checkpoint.Every == 0 {
				if err := r.mkdirSave(save); err != nil {
					return nil, taskSummary{}, err
				}
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, taskSummary{}, fmt.Errorf("interrupted at sample %d of %d of task %s%s", t.Done, total, task, kept())
			}
			return nil, taskSummary{}, fmt.Errorf("task %s: %w%s", task, err, kept())
		}
	}
	if t.Done != total {
		return nil, taskSummary{}, fmt.Errorf("task %s: read %d samples, want %d", task, t.Done, total)
	}
	r.report.End()
	if skipped > 0 {
		fmt.Fprintf(r.stderr, "calibrate: task %s: %d image files skipped: Triton could not decode them (images.on_error: skip)\n", task, skipped)
	}
	if t.Acc.N() == 0 {
		return nil, taskSummary{}, fmt.Errorf("task %s: no sample left: all %d were skipped", task, total)
	}
	if err := r.checkBackbone(src); err != nil {
		return nil, taskSummary{}, err
	}
	if err := r.mkdirSave(save); err != nil {
		return nil, taskSummary{}, err
	}
	return t, taskSummary{
		task: task, n: t.Acc.N(), ran: t.Done - resumed, elapsed: time.Since(began),
		cond: conditionNumber(t.Acc, r.cfg.Beta, r.norm),
	}, nil
}
