package decide

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"slices"
	"sync"

	"github.com/mergectl/react-triton/experiment/sequential"
	"github.com/mergectl/react-triton/problem"
)

// Selector picks the series of one experiment.
type Selector struct {
	// Experiment is the experiment's name (required).
	Experiment string
	// Model, when set, keeps the series of that model only; else the
	// experiment's models are summed.
	Model string
	// Task, when set, keeps the labels of that task only (per-task
	// accuracy); rewards have none.
	Task string
}

// keeps reports whether a series with these labels belongs to s.
func (s Selector) keeps(labels map[string]string) bool {
	return labels["experiment"] == s.Experiment &&
		(s.Model == "" || labels["model"] == s.Model) &&
		(s.Task == "" || labels["task"] == s.Task)
}

// ArmKind names the outcomes of one arm and kind ("label", "reward").
type ArmKind struct{ Arm, Kind string }

// Outcomes are an experiment's outcome counters, summed per arm and kind
// over every series and source read.
type Outcomes struct {
	Samples map[ArmKind]sequential.Sample
	// Experiments are the experiments the sources had outcomes of, for a
	// message naming them when the one asked for is not there.
	Experiments map[string]bool
}

// NewOutcomes returns empty outcomes, to Merge others into.
func NewOutcomes() Outcomes {
	return Outcomes{Samples: map[ArmKind]sequential.Sample{}, Experiments: map[string]bool{}}
}

// the three counters of a sample.
type counter int

const (
	count counter = iota
	sum
	sumSquares
)

// add adds a counter's value to the sample of arm and kind.
func (o Outcomes) add(ak ArmKind, c counter, v float64) {
	s := o.Samples[ak]
	switch c {
	case count:
		s.N += v
	case sum:
		s.Sum += v
	case sumSquares:
		s.SumSq += v
	}
	o.Samples[ak] = s
}

// Merge adds the outcomes of p to o (one sidecar replica's to the
// others').
func (o Outcomes) Merge(p Outcomes) {
	for ak, s := range p.Samples {
		t := o.Samples[ak]
		o.Samples[ak] = sequential.Sample{N: t.N + s.N, Sum: t.Sum + s.Sum, SumSq: t.SumSq + s.SumSq}
	}
	maps.Copy(o.Experiments, p.Experiments)
}

// experimentNames lists the experiments o saw, sorted.
func (o Outcomes) experimentNames() []string {
	return slices.Sorted(maps.Keys(o.Experiments))
}

// Read reads the outcome counters of sel from every source at once: the
// metrics pages (ReadMetrics) of every replica, summed, or a Prometheus
// server (QueryPrometheus) when prometheus is set. The problems of every
// source are returned together, as one problem.List.
func Read(ctx context.Context, client *http.Client, metrics []string, prometheus string, sel Selector) (Outcomes, error) {
	sources := metrics
	if prometheus != "" {
		sources = []string{prometheus}
	}
	results := make([]Outcomes, len(sources))
	errs := make([]error, len(sources))
	var wg sync.WaitGroup
	for i, src := range sources {
		wg.Go(func() {
			if prometheus != "" {
				results[i], errs[i] = QueryPrometheus(ctx, client, src, sel)
			} else {
				results[i], errs[i] = ReadMetrics(ctx, client, src, sel)
			}
		})
	}
	wg.Wait()
	var p problem.List
	all := NewOutcomes()
	for i := range sources {
		if errs[i] != nil {
			if l, ok := errors.AsType[problem.List](errs[i]); ok {
				p = append(p, l...)
			} else {
				p = append(p, &problem.Problem{Path: sources[i], Msg: errs[i].Error()})
			}
			continue
		}
		all.Merge(results[i])
	}
	return all, p.Err()
}
