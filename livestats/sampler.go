package livestats

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mergectl/react-triton/react"
)

// Reason says why a request was not sampled.
type Reason int

// The reasons. Sampled is no skip; NotConfigured (the model is not one of
// the settings' models, or there is no sampler) is not counted; every
// other reason is counted per model and task (MetricSkipped).
const (
	Sampled       Reason = iota
	NotConfigured        // not a sampled model, or sampling off
	OptOut               // the request carries the opt-out header
	NotDrawn             // not in the configured fraction
	Saturated            // the caller's signal says Triton is saturated
	Busy                 // MaxConcurrent samples already in flight
	Failed               // the caller's backbone or expert call failed
	Invalid              // the rows were refused: wrong size, NaN or infinite values
	numReasons
)

var reasonNames = [numReasons]string{"sampled", "not_configured", "opt_out", "fraction", "saturated", "concurrency", "failed", "invalid"}

// String returns the reason as the metrics' reason label writes it.
func (r Reason) String() string {
	if r < 0 || r >= numReasons {
		return fmt.Sprintf("Reason(%d)", int(r))
	}
	return reasonNames[r]
}

// Request is what Admit needs to know of a request.
type Request struct {
	// Model is the model the client called.
	Model string
	// OptOut reports that the request carries the opt-out header
	// (Sampler.OptOutHeader), with any value.
	OptOut bool
	// Saturated reports that Triton is saturated by the caller's signal
	// (the sidecar: its in-flight request budget more than half used), so
	// that a sample would add load where there is none to spare.
	Saturated bool
}

// Sampler accumulates the statistics of sampled requests, per task, and
// writes them as partial-statistics files. It is safe for concurrent use:
// Admit and the Sample's Add from any number of goroutines (each task's
// sums behind a mutex of their own, so tasks accumulate in parallel),
// Checkpoint and Run beside them. A nil *Sampler samples nothing.
type Sampler struct {
	set     Settings
	d       int
	models  map[string]*model
	tasks   map[string]*task
	order   []*task // in the settings' order
	slots   chan struct{}
	draws   atomic.Uint64
	drawMax uint64 // a request is drawn when mix(k) < drawMax (all when fraction is 1)
	heldMax uint64 // a row is held out when mix(seed+row) < heldMax

	mu      sync.Mutex // one checkpoint or rotation at a time
	window  atomic.Int64
	now     func() time.Time
	written atomic.Int64 // Unix time of the last checkpoint written, 0 before
	results [2]atomic.Uint64
}

// model is a sampled model and its counters.
type model struct {
	name     string
	task     *task
	requests atomic.Uint64
	skipped  [numReasons]atomic.Uint64
}

// task is a sampled task: its sums and its staleness.
type task struct {
	name   string
	expert react.ModelRef
	seed   uint64
	next   atomic.Uint64 // the held-out split's row counter

	mu        sync.Mutex
	all, held *react.Accumulator
	fitRows   uint64
	heldRows  uint64

	stale staleness
}

// New returns a sampler for features of dimension d under s, which must
// be enabled, pass Check and name its replica. Its first window starts
// now.
func New(s Settings, d int) (*Sampler, error) {
	if !s.Enabled {
		return nil, errors.New("livestats: sampling is not enabled")
	}
	if err := s.Check().Err(); err != nil {
		return nil, fmt.Errorf("livestats: %w", err)
	}
	if s.Replica == "" {
		return nil, errors.New("livestats: no replica name")
	}
	if d <= 0 {
		return nil, fmt.Errorf("livestats: invalid feature dimension %d", d)
	}
	sm := &Sampler{
		set: s, d: d, models: map[string]*model{}, tasks: map[string]*task{},
		slots: make(chan struct{}, s.MaxConcurrent), now: time.Now,
		drawMax: share(s.Fraction), heldMax: share(s.Holdout),
	}
	for _, ts := range s.Tasks {
		h := fnv.New64a()
		h.Write([]byte(ts.Name))
		t := &task{name: ts.Name, expert: ts.Expert, seed: h.Sum64(), all: react.NewAccumulator(d), held: react.NewAccumulator(d)}
		sm.tasks[ts.Name] = t
		sm.order = append(sm.order, t)
	}
	for _, ms := range s.Models {
		sm.models[ms.Name] = &model{name: ms.Name, task: sm.tasks[ms.Task]}
	}
	sm.window.Store(sm.now().UnixNano())
	return sm, nil
}

// share returns the threshold below which a uniform 64-bit hash falls
// with probability f, f in [0, 1]; 1 gives the largest value, which mix
// reaches too rarely to matter (once in 2⁶⁴).
func share(f float64) uint64 {
	if f >= 1 {
		return math.MaxUint64
	}
	return uint64(f * (1 << 64))
}

// mix is SplitMix64's finaliser: a bijection of the 64-bit integers whose
// outputs, for consecutive inputs, pass for uniform.
func mix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// D returns the feature dimension.
func (s *Sampler) D() int { return s.d }

// Backbone returns the merged backbone whose feature a sample's mtl rows
// hold.
func (s *Sampler) Backbone() react.ModelRef { return s.set.Backbone }

// OptOutHeader returns the header whose presence keeps a request out of
// the sample.
func (s *Sampler) OptOutHeader() string { return s.set.OptOutHeader }

// Admit decides whether to sample r, and counts the decision. A request
// is sampled when its model is a sampled one, it did not opt out, it is
// drawn (the k-th request to any sampled model is drawn when a fixed hash
// of k falls in the fraction: deterministic, and exactly the fraction in
// the long run), Triton is not saturated and fewer than MaxConcurrent
// samples are in flight. It returns the sample, whose Add or Skip the
// caller must call once, or nil and the reason.
func (s *Sampler) Admit(r Request) (*Sample, Reason) {
	if s == nil {
		return nil, NotConfigured
	}
	m, ok := s.models[r.Model]
	if !ok {
		return nil, NotConfigured
	}
	reason := Sampled
	switch {
	case r.OptOut:
		reason = OptOut
	case s.drawMax != math.MaxUint64 && mix(s.draws.Add(1)) >= s.drawMax:
		reason = NotDrawn
	case r.Saturated:
		reason = Saturated
	}
	if reason == Sampled {
		select {
		case s.slots <- struct{}{}:
			return &Sample{s: s, m: m}, Sampled
		default:
			reason = Busy
		}
	}
	m.skipped[reason].Add(1)
	return nil, reason
}

// InFlight returns the number of samples admitted and not yet added or
// skipped.
func (s *Sampler) InFlight() int { return len(s.slots) }

// Sample is one admitted request. Its caller computes the merged
// backbone's and the task's expert's features of the request's inputs
// (Sampler.Backbone, Expert) after the response is sent, then calls Add,
// or Skip when it cannot; either releases the sample's slot.
type Sample struct {
	s    *Sampler
	m    *model
	done atomic.Bool
}

// Task returns the task the sample's rows are accumulated for.
func (x *Sample) Task() string { return x.m.task.name }

// Expert returns the task's expert, whose feature the ind rows hold.
func (x *Sample) Expert() react.ModelRef { return x.m.task.expert }

// Add accumulates the sample's rows, row-major rows×D: mtl the merged
// backbone's features, ind the expert's, row i of each from the same
// input. A share of the rows (Settings.Holdout, by a hash of the task's
// row counter) is added to the held-out sums as well. The live
// reconstruction error of the task's watched correction, if any, is
// computed on the rows first (outside the task's lock). Rows of the wrong
// size or with a NaN or infinite value are refused as a whole and counted
// as Invalid. Add or Skip a second time does nothing.
func (x *Sample) Add(mtl, ind []float32) error {
	if !x.done.CompareAndSwap(false, true) {
		return errors.New("livestats: sample already added or skipped")
	}
	defer func() { <-x.s.slots }()
	t := x.m.task
	if err := t.add(x.s, mtl, ind); err != nil {
		x.m.skipped[Invalid].Add(1)
		return fmt.Errorf("livestats: task %s: %w", t.name, err)
	}
	x.m.requests.Add(1)
	return nil
}

// Skip releases the sample without rows, counting reason (Failed,
// Saturated, or any other).
func (x *Sample) Skip(reason Reason) {
	if !x.done.CompareAndSwap(false, true) {
		return
	}
	<-x.s.slots
	if reason <= NotConfigured || reason >= numReasons {
		reason = Failed
	}
	x.m.skipped[reason].Add(1)
}

// add accumulates a batch into t's sums.
func (t *task) add(s *Sampler, mtl, ind []float32) error {
	d := s.d
	if len(mtl) != len(ind) || len(mtl)%d != 0 || len(mtl) == 0 {
		return fmt.Errorf("rows of %d and %d values: want the same positive multiple of D=%d", len(mtl), len(ind), d)
	}
	for _, v := range [2][]float32{mtl, ind} {
		for _, x := range v {
			if f := float64(x); math.IsNaN(f) || math.IsInf(f, 0) {
				return errors.New("a NaN or infinite value")
			}
		}
	}
	rows := len(mtl) / d
	first := t.next.Add(uint64(rows)) - uint64(rows)
	var hm, hi []float32
	for r := range rows {
		if mix(t.seed+first+uint64(r)) < s.heldMax {
			hm = append(hm, mtl[r*d:(r+1)*d]...)
			hi = append(hi, ind[r*d:(r+1)*d]...)
		}
	}
	resid, target, c := t.stale.measure(mtl, ind, d)

	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.all.AddFloat32(mtl, ind); err != nil {
		return err
	}
	if len(hm) > 0 {
		if err := t.held.AddFloat32(hm, hi); err != nil {
			return err // not reached: the rows were checked
		}
	}
	held := uint64(len(hm) / d)
	t.heldRows += held
	t.fitRows += uint64(rows) - held
	t.stale.record(c, resid, target, int64(rows))
	return nil
}
