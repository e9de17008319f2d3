package embeddings

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/mergectl/react-triton/internal/npyfile"
	"github.com/mergectl/react-triton/react"
)

// File name suffixes of the .npy embeddings of a task (contract):
// DIR/<task>.merged.npy holds the merged backbone's features and
// DIR/<task>.expert.npy the task expert's, N×D each, rows paired.
const (
	MergedSuffix = ".merged.npy"
	ExpertSuffix = ".expert.npy"
)

// Pair is the pairs.Source of one task's two .npy files.
type Pair struct {
	task       string
	merged     *npyfile.Reader
	expert     *npyfile.Reader
	mergedPath string
	expertPath string
	read       int
}

// Open opens a task's two embedding files in dir and checks, before
// reading any data, that both are N×D float32 or float64 arrays in C order
// with the same N and D and with the size their headers describe.
func Open(dir, task string) (*Pair, error) {
	p := &Pair{
		task:       task,
		mergedPath: filepath.Join(dir, task+MergedSuffix),
		expertPath: filepath.Join(dir, task+ExpertSuffix),
	}
	var err error
	if p.merged, err = npyfile.Open(p.mergedPath); err != nil {
		return nil, fmt.Errorf("task %s: %w", task, err)
	}
	if p.expert, err = npyfile.Open(p.expertPath); err != nil {
		p.merged.Close()
		return nil, fmt.Errorf("task %s: %w", task, err)
	}
	m, e := p.merged, p.expert
	switch {
	case m.Rows() != e.Rows():
		err = fmt.Errorf("task %s: %s has %d rows but %s has %d: the rows must be paired", task, p.mergedPath, m.Rows(), p.expertPath, e.Rows())
	case m.Cols() != e.Cols():
		err = fmt.Errorf("task %s: %s has D=%d but %s has D=%d", task, p.mergedPath, m.Cols(), p.expertPath, e.Cols())
	case m.Rows() == 0:
		err = fmt.Errorf("task %s: %s has no rows", task, p.mergedPath)
	}
	if err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// Task implements pairs.Source.
func (p *Pair) Task() string { return p.task }

// Dim implements pairs.Source.
func (p *Pair) Dim() int { return p.merged.Cols() }

// Len implements pairs.Source.
func (p *Pair) Len() int64 { return int64(p.merged.Rows()) }

// MergedPath returns the path of the merged backbone's features.
func (p *Pair) MergedPath() string { return p.mergedPath }

// ExpertPath returns the path of the expert's features.
func (p *Pair) ExpertPath() string { return p.expertPath }

// Next implements pairs.Source. A NaN or infinite value is an error that
// names the file, the row within it and the column.
func (p *Pair) Next(mtl, ind []float64) (int, error) {
	if len(mtl) != len(ind) {
		return 0, errors.New("Next: batches of different lengths")
	}
	n, err := p.merged.ReadRows(mtl)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return 0, io.EOF
		}
		return 0, fmt.Errorf("reading %s: %w", p.mergedPath, err)
	}
	k, err := p.expert.ReadRows(ind[:n*p.Dim()])
	if err != nil || k != n {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, fmt.Errorf("reading %s: %w", p.expertPath, err)
	}
	d := p.Dim()
	if err := checkFinite(p.mergedPath, p.read, d, mtl[:n*d]); err != nil {
		return 0, err
	}
	if err := checkFinite(p.expertPath, p.read, d, ind[:n*d]); err != nil {
		return 0, err
	}
	p.read += n
	return n, nil
}

// checkFinite reports the first NaN or infinite value of z, rows of d values
// read from path starting at row first (counted from 0).
func checkFinite(path string, first, d int, z []float64) error {
	for i, v := range z {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%s: row %d, column %d: value %v: want finite features", path, first+i/d, i%d, v)
		}
	}
	return nil
}

// Close implements pairs.Source.
func (p *Pair) Close() error {
	err1 := p.merged.Close()
	err2 := p.expert.Close()
	return errors.Join(err1, err2)
}

// DiscoverTasks lists the tasks whose embeddings are in dir, sorted: every
// name with a <task>.merged.npy or <task>.expert.npy file. A task with only
// one of the two files, or with an invalid name, is an error.
func DiscoverTasks(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	have := make(map[string][2]bool)
	for _, e := range entries {
		name := e.Name()
		var task string
		var idx int
		switch {
		case strings.HasSuffix(name, MergedSuffix):
			task, idx = strings.TrimSuffix(name, MergedSuffix), 0
		case strings.HasSuffix(name, ExpertSuffix):
			task, idx = strings.TrimSuffix(name, ExpertSuffix), 1
		default:
			continue
		}
		h := have[task]
		h[idx] = true
		have[task] = h
	}
	names := make([]string, 0, len(have))
	for task := range have {
		names = append(names, task)
	}
	sort.Strings(names)
	var tasks []string
	for _, task := range names {
		h := have[task]
		if err := react.ValidateTaskName(task); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, task+MergedSuffix), err)
		}
		if !h[0] {
			return nil, fmt.Errorf("task %s: %s is missing (found %s)", task, filepath.Join(dir, task+MergedSuffix), filepath.Join(dir, task+ExpertSuffix))
		}
		if !h[1] {
			return nil, fmt.Errorf("task %s: %s is missing (found %s)", task, filepath.Join(dir, task+ExpertSuffix), filepath.Join(dir, task+MergedSuffix))
		}
		tasks = append(tasks, task)
	}
	if len(tasks) == 0 {
		return nil, fmt.Errorf("no embeddings in %s: want <task>%s and <task>%s files", dir, MergedSuffix, ExpertSuffix)
	}
	return tasks, nil
}

// OpenAll opens the embeddings of tasks in dir (all tasks found there
// if tasks is empty) and checks them all, including that every task has the
// same D, before any data is read.
func OpenAll(dir string, tasks []string) ([]*Pair, error) {
	if len(tasks) == 0 {
		var err error
		if tasks, err = DiscoverTasks(dir); err != nil {
			return nil, err
		}
	}
	var pairs []*Pair
	closeAll := func() {
		for _, p := range pairs {
			p.Close()
		}
	}
	for _, task := range tasks {
		p, err := Open(dir, task)
		if err != nil {
			closeAll()
			return nil, err
		}
		if len(pairs) > 0 && p.Dim() != pairs[0].Dim() {
			err := fmt.Errorf("task %s: %s has D=%d but task %s has D=%d: every task must have the same D", task, p.mergedPath, p.Dim(), pairs[0].task, pairs[0].Dim())
			p.Close()
			closeAll()
			return nil, err
		}
		pairs = append(pairs, p)
	}
	return pairs, nil
}
